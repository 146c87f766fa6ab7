"""A small JSON Schema checker for tool arguments (standard library only).

Covers the keywords tool schemas use: type, enum, const, properties,
required, additionalProperties, items, minItems, maxItems, minLength,
maxLength, pattern, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
multipleOf, anyOf, oneOf, allOf, not, $ref into $defs/definitions, and the
string formats email, date, time, date-time, uuid, ipv4, ipv6, uri, hostname
(checked as assertions: a tool that asks for an email wants an email).
Unknown keywords are ignored.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d):([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)?$", re.I)
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[^\s]+$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def _valid_date(s: str) -> bool:
    m = _DATE.match(s)
    if not m:
        return False
    y, mo, d = (int(g) for g in m.groups())
    if not 1 <= mo <= 12 or not 1 <= d <= _DAYS[mo - 1]:
        return False
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return not (mo == 2 and d == 29 and not leap)


def _valid_ip(s: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(s).version == version
    except ValueError:
        return False


def format_ok(fmt: str, s: str) -> bool:
    """True when `s` is a valid `fmt` (unknown formats pass)."""
    if fmt == "email":
        return bool(_EMAIL.match(s))
    if fmt == "date":
        return _valid_date(s)
    if fmt == "time":
        return bool(_TIME.match(s))
    if fmt == "date-time":
        date, sep, time = s.replace("t", "T").partition("T")
        return bool(sep) and _valid_date(date) and bool(_TIME.match(time))
    if fmt == "uuid":
        return bool(_UUID.match(s))
    if fmt == "ipv4":
        return _valid_ip(s, 4) and s.count(".") == 3
    if fmt == "ipv6":
        return _valid_ip(s, 6)
    if fmt in ("uri", "url"):
        return bool(_URI.match(s))
    if fmt == "hostname":
        return bool(_HOSTNAME.match(s))
    return True


def type_ok(ty: str, v: Any) -> bool:
    if ty == "string":
        return isinstance(v, str)
    if ty == "integer":
        return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    if ty == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if ty == "boolean":
        return isinstance(v, bool)
    if ty == "object":
        return isinstance(v, dict)
    if ty == "array":
        return isinstance(v, list)
    if ty == "null":
        return v is None
    return True


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _resolve(ref: str, root: dict) -> dict | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def errors(value: Any, schema: Any, path: str = "$", root: Any = None) -> list[str]:
    """Every violation of `schema` by `value`, as "path: what" strings."""
    if root is None:
        root = schema
    if schema is True or schema is None or schema == {}:
        return []
    if schema is False:
        return [f"{path}: no value is allowed here"]
    if not isinstance(schema, dict):
        return []
    out: list[str] = []
    if isinstance(schema.get("$ref"), str):
        target = _resolve(schema["$ref"], root)
        if target is not None:
            out += errors(value, target, path, root)
    ty = schema.get("type")
    if ty is not None:
        types = ty if isinstance(ty, list) else [ty]
        if not any(type_ok(t, value) for t in types):
            out.append(f"{path}: expected {'/'.join(map(str, types))}, got {type(value).__name__}")
            return out
    if "enum" in schema and not any(json_equal(value, e) for e in schema["enum"]):
        out.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and not json_equal(value, schema["const"]):
        out.append(f"{path}: {value!r} is not {schema['const']!r}")
    if isinstance(value, str):
        if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
            out.append(f"{path}: shorter than {schema['minLength']}")
        if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
            out.append(f"{path}: longer than {schema['maxLength']}")
        if isinstance(schema.get("pattern"), str):
            try:
                if not re.search(schema["pattern"], value):
                    out.append(f"{path}: does not match {schema['pattern']!r}")
            except re.error:
                pass
        if isinstance(schema.get("format"), str) and not format_ok(schema["format"], value):
            out.append(f"{path}: {value!r} is not a valid {schema['format']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if isinstance(lo, (int, float)) and value < lo:
            out.append(f"{path}: {value} < minimum {lo}")
        if isinstance(hi, (int, float)) and value > hi:
            out.append(f"{path}: {value} > maximum {hi}")
        xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
        if isinstance(xlo, (int, float)) and not isinstance(xlo, bool) and value <= xlo:
            out.append(f"{path}: {value} <= exclusiveMinimum {xlo}")
        if isinstance(xhi, (int, float)) and not isinstance(xhi, bool) and value >= xhi:
            out.append(f"{path}: {value} >= exclusiveMaximum {xhi}")
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and step > 0 and abs(value / step - round(value / step)) > 1e-9:
            out.append(f"{path}: {value} is not a multiple of {step}")
    if isinstance(value, dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        for key in schema.get("required") or []:
            if key not in value:
                out.append(f"{path}: missing required {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                out += errors(v, props[key], f"{path}.{key}", root)
            elif extra is False:
                out.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, dict):
                out += errors(v, extra, f"{path}.{key}", root)
    if isinstance(value, list):
        if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
            out.append(f"{path}: fewer than {schema['minItems']} items")
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            out.append(f"{path}: more than {schema['maxItems']} items")
        items = schema.get("items")
        if isinstance(items, (dict, bool)):
            for i, v in enumerate(value):
                out += errors(v, items, f"{path}[{i}]", root)
    for sub in schema.get("allOf") or []:
        out += errors(value, sub, path, root)
    if schema.get("anyOf") and not any(not errors(value, s, path, root) for s in schema["anyOf"]):
        out.append(f"{path}: matches none of anyOf")
    if schema.get("oneOf") and sum(1 for s in schema["oneOf"] if not errors(value, s, path, root)) != 1:
        out.append(f"{path}: does not match exactly one of oneOf")
    if "not" in schema and not errors(value, schema["not"], path, root):
        out.append(f"{path}: matches a schema it must not match")
    return out
