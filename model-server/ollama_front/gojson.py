"""Go-compatible JSON and text encoding.

Ollama is written in Go, and clients (and proxies that compare bytes) see
encoding/json's output: compact, HTML-safe, U+2028/U+2029 escaped, float32
and float64 values in Go's shortest form, map keys sorted, times in RFC 3339
with trimmed nanoseconds. These helpers produce the same bytes.
"""

from __future__ import annotations

import calendar
import json
import re
import struct
import time
from decimal import Decimal
from typing import Any


class GoFloat32(str):
    """Marks a float32 for go_json, which writes it as a bare number."""


class GoNumber(str):
    """Marks a number's exact text (a float64 in Go's form) for go_json."""


def go_json(obj: Any, floats: bool = False, sort_keys: bool = False) -> str:
    """encoding/json output: compact, HTML-safe, U+2028/U+2029 escaped.

    With `floats`, GoFloat32 and GoNumber values are written as bare numbers
    and Python floats in Go's float64 form; `sort_keys` orders every object's
    keys, as Go does for a map.
    """
    s = json.dumps(_mark(obj) if floats else obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                   sort_keys=sort_keys)
    if floats:
        s = re.sub(r'"\\u0000GF([-+.e0-9]+)\\u0000"', r"\1", s)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(a, b)
    return s


def _go_float_text(digits: str, value: float) -> str:
    """Go's text for a float whose shortest round-trip digits are `digits`."""
    a = abs(value)
    if a != 0 and (a < 1e-6 or a >= 1e21):
        m, e = ("%.*e" % (max(len(Decimal(digits).as_tuple().digits) - 1, 0), float(digits))).split("e")
        return "%se%s%d" % (m, "-" if int(e) < 0 else "+", abs(int(e)))
    return format(Decimal(digits).normalize(), "f")


def go_float32(f: float) -> str:
    """The text encoding/json writes for a float32 value."""
    digits = next(s for p in range(1, 10) for s in ["%.*g" % (p, f)]
                  if struct.pack("<f", float(s)) == struct.pack("<f", f))
    a = abs(f32(f))
    if a != 0 and (a < f32(1e-6) or a >= f32(1e21)):
        m, e = ("%.*e" % (max(len(Decimal(digits).as_tuple().digits) - 1, 0), f)).split("e")
        return "%se%s%d" % (m, "-" if int(e) < 0 else "+", abs(int(e)))
    return format(Decimal(digits).normalize(), "f")


def go_float64(f: float) -> str:
    """The text encoding/json writes for a float64 value (1.0 is "1")."""
    return _go_float_text(repr(float(f)), float(f))


def _mark(obj: Any) -> Any:
    if isinstance(obj, (GoFloat32, GoNumber)):
        return "\x00GF" + obj + "\x00"
    if isinstance(obj, float):
        return "\x00GF" + go_float64(obj) + "\x00"
    if isinstance(obj, dict):
        return {k: _mark(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_mark(v) for v in obj]
    return obj


def f32(x: float) -> float:
    """x rounded to float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def go_quote(s: str) -> str:
    """strconv.Quote."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in "\a\b\f\n\r\t\v":
            out.append("\\" + "abfnrtv"["\a\b\f\n\r\t\v".index(ch)])
        elif o < 0x20 or o == 0x7F:
            out.append("\\x%02x" % o)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("\\u%04x" % o if o < 0x10000 else "\\U%08x" % o)
    return "".join(out) + '"'


def go_time(ns: int | None = None, utc: bool = True) -> str:
    """time.Time JSON: RFC 3339, nanoseconds with trailing zeros trimmed."""
    ns = time.time_ns() if ns is None else ns
    sec, frac = divmod(ns, 1_000_000_000)
    if utc:
        base, zone = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)), "Z"
    else:
        lt = time.localtime(sec)
        base, off = time.strftime("%Y-%m-%dT%H:%M:%S", lt), lt.tm_gmtoff
        zone = "Z" if off == 0 else "%s%02d:%02d" % ("-" if off < 0 else "+", abs(off) // 3600, abs(off) % 3600 // 60)
    fs = ("%09d" % frac).rstrip("0")
    return base + ("." + fs if fs else "") + zone


def unix_of(ts: str) -> int:
    """time.Time.Unix() of a UTC go_time text (Go's zero time included)."""
    if ts.startswith("0001-01-01"):
        return -62135596800
    return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S"))
