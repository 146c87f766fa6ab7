#!/usr/bin/env python3
"""An Ollama-compatible HTTP front for llama.cpp's llama-server (stdlib only).

Since 0.30, Ollama runs llama-server as its engine and puts a Go HTTP front in
front of it. This module plays that front for a single GGUF model, so that
clients and proxies can be tested against real inference without Ollama.
It follows Ollama 0.32.x (read from its source: server/routes.go,
llm/llama_server.go, middleware/openai.go, openai/openai.go, api/types.go) on
the rendered-prompt path that the `gemma3` library models use:

* The chat prompt is rendered here with the gemma3 library TEMPLATE (below),
  after Ollama's `collate` (consecutive messages of one role joined by a blank
  line; role "tool" has no branch in the template and is dropped). It goes to
  llama-server's POST /completion, always as a stream, with Ollama's options
  (api.DefaultOptions, then the model's parameters, then the request's).
* `num_predict` absent or -1 becomes 10 x num_ctx, as `boundedNumPredict`
  does; 0 is omitted, so llama-server generates without a limit.
* `format: "json"` sends Ollama's JSON-object GBNF (`root ::= object`); a JSON
  object is passed as `json_schema`; anything else is a 500 `invalid format`.
  A schema llama-server rejects comes back with llama-server's status and its
  raw, trimmed body as the error message, before any chunk.
* Like Ollama, generation is cut off once the same (trimmed) token has
  repeated more than 30 times (whitespace-only tokens count as ""): a stream
  then ends without a done chunk, and a non-streaming answer has "done": false.
* done_reason is "length" when llama-server's stop_type is "limit", else
  "stop"; counts and durations come from llama-server's `timings`.

Not covered: images, embeddings, model management (pull/push/create/...),
`template`/`suffix` overrides on generate, CORS headers, `logprobs`.
"""

import argparse
import calendar
import http.client
import ipaddress
import json
import mmap
import os
import re
import select
import socket
import struct
import sys
import time
import urllib.parse
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "0.32.15"
TEMPLATE = """{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if or (eq .Role "user") (eq .Role "system") }}<start_of_turn>user
{{ .Content }}<end_of_turn>
{{ if $last }}<start_of_turn>model
{{ end }}
{{- else if eq .Role "assistant" }}<start_of_turn>model
{{ .Content }}{{ if not $last }}<end_of_turn>
{{ end }}
{{- end }}
{{- end }}"""
MODEL_PARAMS = {"stop": ["<end_of_turn>"], "temperature": 1, "top_k": 64, "top_p": 0.95}
DEFAULT_OPTIONS = {"num_predict": -1, "num_keep": 4, "temperature": 0.8, "top_k": 40, "top_p": 0.9,
                   "min_p": 0.0, "typical_p": 1.0, "repeat_last_n": 64, "repeat_penalty": 1.0,
                   "presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": -1, "stop": None}
INT_OPTS = {"num_keep", "seed", "num_predict", "top_k", "repeat_last_n", "num_ctx", "num_batch",
            "num_gpu", "main_gpu", "num_thread", "draft_num_predict"}
FLOAT_OPTS = {"temperature", "top_p", "min_p", "typical_p", "repeat_penalty", "presence_penalty",
              "frequency_penalty"}
GRAMMAR_JSON = r'''
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
         string ":" ws value
    ("," ws string ":" ws value)*
  )? ws "}"
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? ws "]"
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]) # escapes
  )* "\""
number ::= ("-"? ([0-9] | [1-9] [0-9]*)) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= ([ \t\n] ws)?
'''
RUNNER_STOPPED = ("model runner has unexpectedly stopped, this may be due to resource limitations "
                  "or an internal error, check ollama server logs for details")
JSON_CT = "application/json; charset=utf-8"


# === Go-compatible encoding ===================================================

def go_json(obj, floats=False):
    """encoding/json output: compact, HTML-safe, U+2028/U+2029 escaped."""
    s = json.dumps(_mark(obj) if floats else obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if floats:
        s = re.sub(r'"\\u0000GF([-+.e0-9]+)\\u0000"', r"\1", s)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                 ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(a, b)
    return s


def go_float32(f):
    """The text encoding/json writes for a float32 value."""
    digits = next(s for p in range(1, 10) for s in ["%.*g" % (p, f)]
                  if struct.pack("<f", float(s)) == struct.pack("<f", f))
    a = abs(f32(f))
    if a != 0 and (a < f32(1e-6) or a >= f32(1e21)):
        m, e = ("%.*e" % (max(len(Decimal(digits).as_tuple().digits) - 1, 0), f)).split("e")
        return "%se%s%d" % (m, "-" if int(e) < 0 else "+", abs(int(e)))
    return format(Decimal(digits).normalize(), "f")


class GoFloat32(str):
    """Marks a float32 for go_json, which writes it as a bare number."""


def _mark(obj):
    if isinstance(obj, GoFloat32):
        return "\x00GF" + obj + "\x00"
    if isinstance(obj, dict):
        return {k: _mark(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_mark(v) for v in obj]
    return obj


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def go_quote(s):
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


def go_time(ns=None, utc=True):
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


# === request decoding (encoding/json error texts) =============================

class HTTPFail(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def _go_char(c):
    return "'\\''" if c == "'" else "'\"'" if c == '"' else "'" + go_quote(c)[1:-1] + "'"


def go_syntax_error(text):
    """The error encoding/json's Decoder reports for the first invalid JSON value."""
    n = len(text)
    ws = " \t\r\n"

    def skip(i):
        while i < n and text[i] in ws:
            i += 1
        return i

    def bad(i, ctx):
        raise HTTPFail(400, "invalid character %s %s" % (_go_char(text[i]), ctx))

    def need(i):
        if i >= n:
            raise HTTPFail(400, "unexpected EOF")

    def value(i, ctx="looking for beginning of value"):
        i = skip(i)
        need(i)
        c = text[i]
        if c == "{":
            i = skip(i + 1)
            need(i)
            if text[i] == "}":
                return i + 1
            while True:
                need(i)
                if text[i] != '"':
                    bad(i, "looking for beginning of object key string")
                i = skip(string(i))
                need(i)
                if text[i] != ":":
                    bad(i, "after object key")
                i = skip(value(i + 1))
                need(i)
                if text[i] == "}":
                    return i + 1
                if text[i] != ",":
                    bad(i, "after object key:value pair")
                i = skip(i + 1)
        if c == "[":
            i = skip(i + 1)
            need(i)
            if text[i] == "]":
                return i + 1
            while True:
                i = skip(value(i))
                need(i)
                if text[i] == "]":
                    return i + 1
                if text[i] != ",":
                    bad(i, "after array element")
                i += 1
        if c == '"':
            return string(i)
        if c == "-" or c.isdigit():
            m = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?").match(text, i)
            j = m.end() if m else i
            if j == i or text[j - 1] == "-":
                need(i + 1)
                bad(i + 1, "in numeric literal")
            if j < n and text[j] in ".eE":
                need(j + 1)
                bad(j + 1, "after decimal point in numeric literal" if text[j] == "." else "in exponent of numeric literal")
            return j
        for lit in ("true", "false", "null"):
            if c == lit[0]:
                for k, want in enumerate(lit[1:], 1):
                    need(i + k)
                    if text[i + k] != want:
                        bad(i + k, "in literal %s (expecting %s)" % (lit, _go_char(want)))
                return i + len(lit)
        bad(i, ctx)

    def string(i):
        i += 1
        while True:
            need(i)
            c = text[i]
            if c == '"':
                return i + 1
            if c == "\\":
                need(i + 1)
                if text[i + 1] == "u":
                    for k in range(2, 6):
                        need(i + k)
                        if text[i + k] not in "0123456789abcdefABCDEF":
                            bad(i + k, "in \\u hexadecimal character escape")
                    i += 6
                    continue
                if text[i + 1] not in '"\\/bfnrt':
                    bad(i + 1, "in string escape code")
                i += 2
                continue
            if ord(c) < 0x20:
                bad(i, "in string literal")
            i += 1

    value(0)
    raise HTTPFail(400, "unexpected EOF")


JSON_KIND = {str: "string", bool: "bool", int: "number", float: "number", list: "array", dict: "object"}
# Top-level request fields encoding/json checks by type (Go type name shown in errors).
FIELD_TYPES = {
    "model": (str, "string"), "prompt": (str, "string"), "suffix": (str, "string"),
    "system": (str, "string"), "template": (str, "string"), "messages": (list, "[]api.Message"),
    "stream": (bool, "bool"), "raw": (bool, "bool"), "truncate": (bool, "bool"), "shift": (bool, "bool"),
    "logprobs": (bool, "bool"), "_debug_render_only": (bool, "bool"), "tools": (list, "api.Tools"),
    "options": (dict, "map[string]interface {}"), "top_logprobs": (int, "int"),
    "context": (list, "[]int"), "images": (list, "[]api.ImageData"),
}


OAI_FIELD_TYPES = {"model": (str, "string"), "messages": (list, "[]openai.Message"), "stream": (bool, "bool"),
                   "tools": (list, "[]api.Tool"), "top_logprobs": (int, "int")}


def decode_request(body, struct_name, native=True):
    """Decode a request body as Ollama's gin handlers do; returns (dict, raw field texts)."""
    text = body.decode("utf-8", errors="replace")
    if not text.strip(" \t\r\n"):
        raise HTTPFail(400, "missing request body")
    start = len(text) - len(text.lstrip(" \t\r\n"))
    dec = json.JSONDecoder()
    try:
        obj, _ = dec.raw_decode(text, start)
    except ValueError:
        go_syntax_error(text)
    if obj is None:
        return {}, {}
    if not isinstance(obj, dict):
        raise HTTPFail(400, "json: cannot unmarshal %s into Go value of type api.%s" % (JSON_KIND[type(obj)], struct_name))
    raw = {}
    if "format" in obj:  # json.RawMessage keeps the exact bytes
        i = start + 1
        while True:
            i = len(text) - len(text[i:].lstrip(" \t\r\n,"))
            if text[i] == "}":
                break
            key, i = dec.raw_decode(text, i)
            i = len(text) - len(text[i:].lstrip(" \t\r\n:"))
            vstart = i
            _, i = dec.raw_decode(text, i)
            if key == "format":
                raw["format"] = text[vstart:i]
    fields = FIELD_TYPES if native else OAI_FIELD_TYPES
    for key, val in obj.items():
        if val is None or key not in fields:
            continue
        want, goname = fields[key]
        ok = isinstance(val, want) and not (want is int and isinstance(val, bool))
        if want is int and isinstance(val, float):
            raise HTTPFail(400, "json: cannot unmarshal number %s into Go struct field %s.%s of type int" % (repr(val), struct_name, key))
        if not ok:
            raise HTTPFail(400, "json: cannot unmarshal %s into Go struct field %s.%s of type %s" % (JSON_KIND[type(val)], struct_name, key, goname))
    if not native:
        return obj, raw
    for m in obj.get("messages") or []:
        if not isinstance(m, dict):
            raise HTTPFail(400, "json: cannot unmarshal %s into Go value of type api.Alias" % JSON_KIND[type(m)])
        for f in ("role", "content", "thinking", "tool_name", "tool_call_id"):
            if m.get(f) is not None and not isinstance(m[f], str):
                raise HTTPFail(400, "json: cannot unmarshal %s into Go struct field Alias.%s of type string" % (JSON_KIND[type(m[f])], f))
        m["role"] = (m.get("role") or "").lower()
    think = obj.get("think")
    if think is not None and not isinstance(think, bool):
        if not isinstance(think, str):
            raise HTTPFail(400, 'think must be a boolean or string ("high", "medium", "low", "max", true, or false)')
        if think not in ("high", "medium", "low", "max"):
            raise HTTPFail(400, 'invalid think value: %s (must be "high", "medium", "low", "max", true, or false)' % go_quote(think))
    obj["_keep_alive_zero"] = keep_alive_is_zero(obj.get("keep_alive"))
    return obj, raw


def keep_alive_is_zero(v):
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float, str)):
        if v is not None:
            raise HTTPFail(400, "Unsupported type: '%s'" % {bool: "bool", list: "[]interface {}", dict: "map[string]interface {}"}[type(v)])
        return False
    if isinstance(v, str):
        if not re.fullmatch(r"[-+]?(0|((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)", v):
            raise HTTPFail(400, "time: invalid duration %s" % go_quote(v))
        return not re.search(r"[1-9]", v)
    return v == 0


# === the model ================================================================

GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
TENSOR_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
                10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 24: "I8",
                25: "I16", 26: "I32", 27: "I64", 28: "F64", 30: "BF16"}
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
              17: "Q5_K_M", 18: "Q6_K", 32: "BF16"}


def read_gguf(path, arrays=False):
    """GGUF metadata as Ollama's ggml.Decode reads it: (kv, tensors).

    Without `arrays`, non-empty arrays read as None (JSON null), as in a
    non-verbose /api/show; with it they are read whole."""
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        pos = 0

        def rd(fmt):
            nonlocal pos
            v = struct.unpack_from(fmt, buf, pos)[0]
            pos += struct.calcsize(fmt)
            return v

        def rstr():
            nonlocal pos
            n = rd("<Q")
            pos += n
            return bytes(buf[pos - n:pos]).decode("utf-8", errors="replace")

        def rval(t):
            nonlocal pos
            if t == 8:
                return rstr()
            if t == 9:
                et, count = rd("<I"), rd("<Q")
                if arrays or count == 0:
                    return [rval(et) for _ in range(count)]
                if et == 8:
                    for _ in range(count):
                        pos += 8 + struct.unpack_from("<Q", buf, pos)[0]
                else:
                    pos += count * struct.calcsize(GGUF_SCALARS[et])
                return None
            v = rd(GGUF_SCALARS[t])
            return GoFloat32(go_float32(v)) if t == 6 else v

        if buf[:4] != b"GGUF":
            raise ValueError("%s is not a GGUF file" % path)
        pos = 8
        n_tensors, n_kv = rd("<Q"), rd("<Q")
        kv = {}
        for _ in range(n_kv):
            key = rstr()
            kv[key] = rval(rd("<I"))
        tensors, params = [], 0
        for _ in range(n_tensors):
            name = rstr()
            shape = [rd("<Q") for _ in range(rd("<I"))]
            kind = rd("<I")
            rd("<Q")
            tensors.append({"name": name, "type": TENSOR_TYPES.get(kind, str(kind)), "shape": shape})
            count = 1
            for d in shape:
                count *= d
            params += count
        kv["general.parameter_count"] = params
        return kv, tensors
    finally:
        buf.close()


def human_number(b):
    if b >= 1_000_000_000:
        x = b / 1e9
        return "%.0fB" % x if x == int(x) else "%.1fB" % x
    if b >= 1_000_000:
        x = b / 1e6
        return "%.0fM" % x if x == int(x) else "%.2fM" % x
    return "%.0fK" % (b / 1e3) if b >= 1000 else str(b)


NAME_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,79}")


def parse_name(s):
    """types/model.ParseName with Ollama's defaults; None when the name is invalid."""
    s = s.split("@", 1)[0]
    head, sep, tag = s.rpartition(":")
    if not sep or "/" in tag:
        head, tag = s, "latest"
    parts = head.split("/")
    if len(parts) > 3:
        return None
    parts = ["registry.ollama.ai", "library"][: 3 - len(parts)] + parts
    host, ns, model = parts
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,349}", host) or not all(
            NAME_PART.fullmatch(p) for p in (ns, model, tag)):
        return None
    return host, ns, model, tag


def display_shortest(name):
    host, ns, model, tag = name
    if host.lower() != "registry.ollama.ai":
        return "%s/%s/%s:%s" % name
    return ("%s:%s" % (model, tag)) if ns.lower() == "library" else "%s/%s:%s" % (ns, model, tag)


class Model:
    def __init__(self, name, gguf):
        self.name = name
        self.parsed = parse_name(name)
        self.full_name = "%s/%s/%s:%s" % self.parsed
        self.gguf = gguf
        self.kv, self.tensors = read_gguf(gguf) if gguf else ({}, [])
        st = os.stat(gguf) if gguf else None
        self.size = st.st_size if st else 0
        self.modified_ns = st.st_mtime_ns if st else time.time_ns()
        self.digest = __import__("hashlib").sha256(("%s %s %d" % (name, gguf, self.size)).encode()).hexdigest()
        arch = self.kv.get("general.architecture", "gemma3")
        self.details = {"parent_model": "", "format": "gguf", "family": arch, "families": [arch],
                        "parameter_size": human_number(self.kv.get("general.parameter_count", 0)),
                        "quantization_level": FILE_TYPES.get(self.kv.get("general.file_type"), "unknown")}

    def matches(self, name):
        return name is not None and tuple(p.lower() for p in name) == tuple(p.lower() for p in self.parsed)

    def list_entry(self, with_caps=True):
        e = {"name": self.name, "model": self.name, "modified_at": go_time(self.modified_ns, utc=False),
             "size": self.size, "digest": self.digest, "details": self.details}
        if with_caps:
            e["capabilities"] = ["completion"]
        return e

    def show(self, verbose):
        kv = read_gguf(self.gguf, arrays=True)[0] if verbose and self.gguf else self.kv
        info = {k: v for k, v in kv.items() if k not in ("general.name", "tokenizer.chat_template")}
        params = "\n".join("%-30s %s" % (k, json.dumps(v)) for k, vs in sorted(MODEL_PARAMS.items())
                           for v in (vs if isinstance(vs, list) else [vs]))
        modelfile = ('# Modelfile generated by "ollama show"\n# To build a new Modelfile based on this, replace '
                     'FROM with:\n# FROM %s\n\nFROM %s\nTEMPLATE """%s"""\n' % (self.name, self.gguf, TEMPLATE)
                     + "".join("PARAMETER %s %s\n" % (k, v) for k, vs in sorted(MODEL_PARAMS.items())
                               for v in (vs if isinstance(vs, list) else [vs])))
        return {"modelfile": modelfile, "parameters": params, "template": TEMPLATE, "details": self.details,
                "model_info": dict(sorted(info.items())), "tensors": self.tensors,
                "capabilities": ["completion"], "modified_at": go_time(self.modified_ns, utc=False)}


# === prompt rendering =========================================================

def collate(msgs):
    out = []
    for m in msgs:
        if out and out[-1]["role"] == m["role"] and m["role"] != "tool":
            out[-1] = dict(out[-1], content=out[-1]["content"] + "\n\n" + m["content"])
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    return out


def render(msgs):
    """The gemma3 TEMPLATE above, applied to Ollama's collated messages."""
    msgs = collate(msgs)
    out = []
    for i, m in enumerate(msgs):
        last = i == len(msgs) - 1
        if m["role"] in ("user", "system"):
            out.append("<start_of_turn>user\n%s<end_of_turn>\n" % m["content"])
            if last:
                out.append("<start_of_turn>model\n")
        elif m["role"] == "assistant":
            out.append("<start_of_turn>model\n%s" % m["content"] + ("" if last else "<end_of_turn>\n"))
    return "".join(out)


# === options and the upstream call ============================================

def merge_options(req_opts):
    """api.DefaultOptions, then the model's parameters, then the request (Options.FromMap)."""
    opts = dict(DEFAULT_OPTIONS)
    for layer in (MODEL_PARAMS, req_opts or {}):
        for key, val in layer.items():
            if val is None or key not in DEFAULT_OPTIONS and key not in INT_OPTS and key != "use_mmap":
                continue
            if key in INT_OPTS:
                if isinstance(val, bool) or not isinstance(val, (int, float)):
                    raise HTTPFail(500, 'option "%s" must be of type integer' % key)
                val = int(val)
            elif key in FLOAT_OPTS:
                if isinstance(val, bool) or not isinstance(val, (int, float)):
                    raise HTTPFail(500, 'option "%s" must be of type float32' % key)
                val = f32(float(val))
            elif key == "use_mmap":
                if not isinstance(val, bool):
                    raise HTTPFail(500, 'option "%s" must be of type boolean' % key)
            elif key == "stop":
                if not isinstance(val, list):
                    raise HTTPFail(500, 'option "%s" must be of type array' % key)
                if not all(isinstance(s, str) for s in val):
                    raise HTTPFail(500, 'option "%s" must be of an array of strings' % key)
            opts[key] = val
    return opts


def f32_json(x):
    """float32 values go to llama-server in Go's shortest float32 form."""
    return float(go_float32(x))


class Upstream:
    """llama-server over HTTP; one connection per request so closing it stops generation."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.num_ctx = None

    def conn(self, timeout=None):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def call(self, method, path, payload=None, timeout=30):
        c = self.conn(timeout)
        try:
            body = json.dumps(payload).encode() if payload is not None else None
            c.request(method, path, body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            if r.status >= 400:
                raise HTTPFail(500, "%s error: %s" % (path.strip("/"), data.decode(errors="replace")))
            return json.loads(data)
        except OSError:
            raise HTTPFail(500, RUNNER_STOPPED)
        finally:
            c.close()

    def context_length(self):
        if self.num_ctx is None:
            try:
                props = self.call("GET", "/props")
                self.num_ctx = int(props.get("default_generation_settings", {}).get("n_ctx") or 4096)
            except (HTTPFail, ValueError, TypeError):
                return 4096
        return self.num_ctx

    def tokenize(self, text):
        return self.call("POST", "/tokenize", {"content": text}).get("tokens", [])

    def detokenize(self, tokens):
        return self.call("POST", "/detokenize", {"tokens": tokens}).get("content", "")

    def completion(self, prompt, opts, fmt_raw, alive):
        """llmServer.Completion: yields ("chunk", text) then ("done", metrics); raises HTTPFail."""
        num_ctx = self.context_length()
        n_predict = opts["num_predict"]
        if n_predict < 0 or n_predict > 10 * num_ctx:
            n_predict = 10 * num_ctx
        req = {"prompt": prompt, "stream": True, "cache_prompt": True}
        if n_predict:
            req["n_predict"] = n_predict
        if opts["num_keep"]:
            req["n_keep"] = opts["num_keep"]
        req.update(temperature=f32_json(opts["temperature"]), top_k=opts["top_k"], top_p=f32_json(opts["top_p"]),
                   min_p=f32_json(opts["min_p"]))
        if opts["stop"]:
            req["stop"] = opts["stop"]
        req.update(repeat_penalty=f32_json(opts["repeat_penalty"]), repeat_last_n=opts["repeat_last_n"],
                   frequency_penalty=f32_json(opts["frequency_penalty"]),
                   presence_penalty=f32_json(opts["presence_penalty"]))
        if opts["typical_p"]:
            req["typical_p"] = f32_json(opts["typical_p"])
        req["seed"] = opts["seed"]
        if fmt_raw not in (None, "", "null", '""'):
            if fmt_raw == '"json"':
                req["grammar"] = GRAMMAR_JSON
            elif fmt_raw.startswith("{"):
                req["json_schema"] = json.loads(fmt_raw)
            else:
                raise HTTPFail(500, 'invalid format: %s; expected "json" or a valid JSON Schema object' % go_quote(fmt_raw))
        c = self.conn()
        try:
            try:
                c.request("POST", "/completion", body=json.dumps(req, ensure_ascii=False).encode(),
                          headers={"Content-Type": "application/json"})
                r = c.getresponse()
            except OSError:
                raise HTTPFail(500, RUNNER_STOPPED)
            if r.status >= 400:
                raise HTTPFail(r.status, r.read().decode("utf-8", errors="replace").strip())
            last, repeat, final = "", 0, None
            while True:
                line = r.readline()
                if not line:
                    break
                line = line.rstrip(b"\r\n")
                if not line or line.startswith(b":"):
                    continue
                if line.startswith(b"data: "):
                    line = line[6:]
                try:
                    ev = json.loads(line)
                except ValueError as e:
                    raise HTTPFail(500, "error unmarshalling llama-server response: %s" % e)
                content = ev.get("content") or ""
                if content.strip() == last:
                    repeat += 1
                else:
                    last, repeat = content.strip(), 0
                if repeat > 30:
                    return  # Ollama ends the response here, without a done chunk
                if content and not ev.get("stop"):
                    yield "chunk", content
                    if not alive():
                        return
                if ev.get("stop"):
                    t = ev.get("timings") or {}
                    final = {"content": content,
                             "done_reason": "length" if ev.get("stop_type") == "limit" else "stop",
                             "prompt_eval_count": int(t.get("cache_n", 0)) + int(t.get("prompt_n", 0)),
                             "prompt_eval_duration": int(float(t.get("prompt_ms", 0)) * 1e6),
                             "eval_count": int(t.get("predicted_n", 0)),
                             "eval_duration": int(float(t.get("predicted_ms", 0)) * 1e6)}
                    break
            if final is not None:
                while r.readline():
                    pass
                yield "done", final
        finally:
            c.close()


def metrics(final, start_ns, loaded_ns):
    m = {"total_duration": time.monotonic_ns() - start_ns, "load_duration": loaded_ns - start_ns}
    m.update((k, final[k]) for k in ("prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"))
    return {k: v for k, v in m.items() if v}


# === handlers (server/routes.go) ==============================================

class Front:
    def __init__(self, model, upstream):
        self.model, self.up = model, upstream
        self.last_used = None

    def _resolve(self, name_str, empty_status, empty_msg):
        if not name_str:
            raise HTTPFail(empty_status, empty_msg)
        name = parse_name(name_str)
        if name is None:
            raise HTTPFail(400, "invalid model name")
        if not self.model.matches(name):
            raise HTTPFail(404, "model '%s' not found" % name_str)

    def _common(self, req, caps):
        if req.get("think") and (req["think"] is True or isinstance(req["think"], str)):
            raise HTTPFail(400, "%s does not support thinking" % go_quote(req["model"]))
        if caps:
            raise HTTPFail(400, "%s does not support %s" % (self.model.full_name, "\n".join(caps)))
        return merge_options(req.get("options"))

    def chat_prompt(self, msgs, truncate):
        """server/prompt.go chatPrompt: drop the oldest messages until the prompt fits num_ctx."""
        num_ctx, cur, system = self.up.context_length(), 0, []
        if truncate:
            for i in range(len(msgs)):
                system = [m for m in msgs[:i] if m["role"] == "system"]
                if len(self.up.tokenize(render(system + msgs[i:]))) <= num_ctx or i == len(msgs) - 1:
                    cur = i
                    break
        return render(system + msgs[cur:])

    def chat(self, req, raw, alive):
        """ChatHandler: returns (immediate response or None, generator of chunks)."""
        start = time.monotonic_ns()
        if not 0 <= (req.get("top_logprobs") or 0) <= 20:
            raise HTTPFail(400, "top_logprobs must be between 0 and 20")
        self._resolve(req.get("model"), 400, "model is required")
        msgs = [m for m in (req.get("messages") or [])]
        name = req["model"]
        if not msgs and req["_keep_alive_zero"]:
            return self._short(name, "unload", chat=True), None
        opts = self._common(req, ["tools"] if req.get("tools") else [])
        self.last_used = time.time_ns()
        loaded = time.monotonic_ns()
        if not msgs:
            return self._short(name, "load", chat=True), None
        prompt = self.chat_prompt([{"role": m["role"], "content": m.get("content") or ""} for m in msgs],
                                  req.get("truncate", True) is not False)

        def gen():
            for kind, val in self.up.completion(prompt, opts, raw.get("format"), alive):
                res = {"model": name, "created_at": go_time(), "message": {"role": "assistant"}, "done": kind == "done"}
                res["message"]["content"] = val if kind == "chunk" else val["content"]
                if kind == "done":
                    res["done_reason"] = val["done_reason"]
                    res.update(metrics(val, start, loaded))
                yield res
        return None, gen()

    def generate(self, req, raw, alive):
        """GenerateHandler."""
        start = time.monotonic_ns()
        if not 0 <= (req.get("top_logprobs") or 0) <= 20:
            raise HTTPFail(400, "top_logprobs must be between 0 and 20")
        name = req.get("model") or ""
        self._resolve(name, 404, "model '' not found")
        prompt = req.get("prompt") or ""
        if not prompt and req["_keep_alive_zero"]:
            return self._short(name, "unload", chat=False), None
        if req.get("raw") and (req.get("template") or req.get("system") or req.get("context")):
            raise HTTPFail(400, "raw mode does not support template, system, or context")
        opts = self._common(req, ["insert"] if req.get("suffix") else [])
        self.last_used = time.time_ns()
        loaded = time.monotonic_ns()
        if not prompt:
            return self._short(name, "load", chat=False), None
        if req.get("template"):
            raise HTTPFail(500, "template overrides are not supported by this front")
        if not req.get("raw"):
            msgs = ([{"role": "system", "content": req["system"]}] if req.get("system") else [])
            prompt = self.chat_prompt(msgs + [{"role": "user", "content": prompt}], req.get("truncate", True) is not False)
            if req.get("context") is not None:
                prompt = self.up.detokenize(req["context"]) + prompt

        def gen():
            text = []
            for kind, val in self.up.completion(prompt, opts, raw.get("format"), alive):
                res = {"model": name, "created_at": go_time(), "response": val if kind == "chunk" else val["content"],
                       "done": kind == "done"}
                text.append(res["response"])
                if kind == "done":
                    res["done_reason"] = val["done_reason"]
                    if not req.get("raw"):
                        res["context"] = self.up.tokenize(prompt + "".join(text))
                    res.update(metrics(val, start, loaded))
                yield res
        return None, gen()

    @staticmethod
    def _short(name, reason, chat):
        res = {"model": name, "created_at": go_time()}
        res.update({"message": {"role": "assistant", "content": ""}} if chat else {"response": ""})
        res.update(done=True, done_reason=reason)
        return res

    def show(self, req):
        name_str = req.get("model") or req.get("name")
        if not name_str:
            raise HTTPFail(400, "model is required")
        name = parse_name(name_str)
        if name is None:
            raise HTTPFail(400, "invalid model name")
        if not self.model.matches(name):
            raise HTTPFail(404, "model '%s' not found" % display_shortest(name))
        return self.model.show(bool(req.get("verbose")))

    def ps(self):
        if self.last_used is None:
            return {"models": []}
        e = self.model.list_entry(with_caps=False)
        del e["modified_at"]
        e.update(expires_at=go_time(self.last_used + 300 * 10**9, utc=False), size_vram=0,
                 context_length=self.up.context_length())
        return {"models": [e]}


def merge_chunks(chunks, chat):
    """The non-streaming path: concatenate text, keep everything else from the last chunk."""
    last, text = None, []
    for res in chunks:
        text.append(res["message"]["content"] if chat else res["response"])
        last = res
    if last is None:  # stream ended without any chunk: Go's zero value
        last = {"model": "", "created_at": "0001-01-01T00:00:00Z"}
        last.update({"message": {"role": "", "content": ""}} if chat else {"response": ""})
        last["done"] = False
    if chat:
        last["message"]["content"] = "".join(text)
    else:
        last["response"] = "".join(text)
    return last


# === OpenAI compatibility (middleware/openai.go, openai/openai.go) ============

def oai_error(status, message):
    etype = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
    return {"error": {"message": message, "type": etype, "param": None, "code": None}}


def go_type_name(v):
    return {type(None): "<nil>", bool: "bool", int: "float64", float: "float64", str: "string",
            list: "[]interface {}", dict: "map[string]interface {}"}[type(v)]


def from_chat_request(r):
    """openai.FromChatRequest: returns (api.ChatRequest dict, raw format text)."""
    msgs = []
    for m in r.get("messages") or []:
        if not isinstance(m, dict):
            raise HTTPFail(400, "json: cannot unmarshal %s into Go struct field ChatCompletionRequest.messages "
                                "of type openai.Message" % JSON_KIND[type(m)])
        role, content = (m.get("role") or "").lower(), m.get("content")
        calls = m.get("tool_calls")
        for tc in calls or []:
            try:
                json.loads((tc.get("function") or {}).get("arguments") or "")
            except ValueError:
                raise HTTPFail(400, "invalid tool call arguments")
        if isinstance(content, str):
            msgs.append({"role": role, "content": content})
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict) or part.get("type") not in ("text", "image_url", "input_audio"):
                    raise HTTPFail(400, "invalid message format")
                if part["type"] == "text":
                    if not isinstance(part.get("text"), str):
                        raise HTTPFail(400, "invalid message format")
                    msgs.append({"role": role, "content": part["text"]})
                else:
                    url = part.get("image_url")
                    url = url.get("url") if isinstance(url, dict) else url
                    if isinstance(url, str) and url.startswith(("http://", "https://")):
                        raise HTTPFail(400, "image URLs are not currently supported, please use base64 encoded data instead")
                    msgs.append({"role": role, "content": ""})
        elif calls is None:
            raise HTTPFail(400, "invalid message content type: %s" % go_type_name(content))
        else:
            msgs.append({"role": role, "content": ""})
    opts = {}
    stop = r.get("stop")
    if isinstance(stop, str):
        opts["stop"] = [stop]
    elif isinstance(stop, list):
        opts["stop"] = [s for s in stop if isinstance(s, str)]
    if r.get("max_tokens") is not None:
        opts["num_predict"] = r["max_tokens"]
    opts["temperature"] = r["temperature"] if r.get("temperature") is not None else 1.0
    for k in ("seed", "frequency_penalty", "presence_penalty"):
        if r.get(k) is not None:
            opts[k] = r[k]
    opts["top_p"] = r["top_p"] if r.get("top_p") is not None else 1.0
    fmt = None
    rf = r.get("response_format")
    if isinstance(rf, dict):
        kind = str(rf.get("type") or "").strip().lower()
        if kind == "json_object":
            fmt = '"json"'
        elif kind == "json_schema" and isinstance(rf.get("json_schema"), dict) and "schema" in rf["json_schema"]:
            fmt = go_json(rf["json_schema"]["schema"])
    effort = (r.get("reasoning") or {}).get("effort") if isinstance(r.get("reasoning"), dict) else r.get("reasoning_effort")
    think = None
    if effort:
        if effort not in ("none", "minimal", "low", "medium", "high", "max", "xhigh", "ultra"):
            raise HTTPFail(400, 'invalid reasoning value: %s (must be "minimal", "low", "medium", "high", "xhigh", '
                                '"ultra", "max", or "none")' % go_quote(effort))
        think = effort != "none"
    req = {"model": r.get("model") or "", "messages": msgs, "options": opts, "stream": bool(r.get("stream")),
           "tools": r.get("tools"), "think": think, "_keep_alive_zero": False}
    return req, {"format": fmt}


def unix_of(ts):
    if ts.startswith("0001-01-01"):
        return -62135596800
    return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S"))


def to_chat_completion(cid, res):
    reason = res.get("done_reason") or None
    return {"id": cid, "object": "chat.completion", "created": unix_of(res["created_at"]),
            "model": res["model"], "system_fingerprint": "fp_ollama",
            "choices": [{"index": 0, "message": {"role": res["message"]["role"], "content": res["message"]["content"]},
                         "finish_reason": reason}],
            "usage": usage(res)}


def usage(res):
    p, c = res.get("prompt_eval_count", 0), res.get("eval_count", 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def chunk(cid, created, res, delta, finish=None):
    return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": res["model"],
            "system_fingerprint": "fp_ollama", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


# === HTTP layer ===============================================================

def host_allowed(host_header):
    """allowedHostsMiddleware for a loopback listener: True, False, or "hostname"."""
    host = host_header or ""
    if host.startswith("["):
        host = host[1:host.find("]")] if "]" in host else host
    elif host.count(":") == 1:
        host = host.split(":")[0]
    try:
        ip = ipaddress.ip_address(host)
        return ip.is_loopback or ip.is_private or ip.is_unspecified
    except ValueError:
        pass
    host = host.lower()
    if host in ("", "localhost", socket.gethostname().lower()) or host.endswith((".localhost", ".local", ".internal")):
        return "hostname"
    return False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    front = None
    verbose = False
    ROUTES = {
        "/": {"GET": "root", "HEAD": "root"},
        "/api/version": {"GET": "version", "HEAD": "version"},
        "/api/tags": {"GET": "tags", "HEAD": "tags"},
        "/api/ps": {"GET": "ps"},
        "/api/show": {"POST": "show"},
        "/api/chat": {"POST": "chat"},
        "/api/generate": {"POST": "generate"},
        "/v1/chat/completions": {"POST": "v1_chat"},
        "/v1/models": {"GET": "v1_models"},
    }
    UNSUPPORTED = {"/api/pull": "POST", "/api/push": "POST", "/api/create": "POST", "/api/copy": "POST",
                   "/api/delete": "DELETE", "/api/embed": "POST", "/api/embeddings": "POST",
                   "/v1/completions": "POST", "/v1/embeddings": "POST", "/v1/responses": "POST",
                   "/v1/messages": "POST"}

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("[ollama-front] %s %s\n" % (self.address_string(), fmt % args))

    def send_response(self, code, message=None):
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    # --- responses ---
    def send_bytes(self, status, ctype, data, headers=()):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_gin_json(self, status, obj, floats=False):
        self.send_bytes(status, JSON_CT, go_json(obj, floats).encode())

    def send_encoder_json(self, status, obj):
        self.send_bytes(status, "application/json", (go_json(obj) + "\n").encode())

    def start_stream(self, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def write_chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def alive(self):
        """False once the client has closed its side of the connection."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return not readable or self.connection.recv(1, socket.MSG_PEEK) != b""
        except OSError:
            return False

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline(65537).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline(65537)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    # --- routing (gin) ---
    def dispatch(self):
        allowed = host_allowed(self.headers.get("Host"))
        if not allowed:
            return self.send_bytes(403, None, b"")
        if allowed == "hostname" and self.command == "OPTIONS":
            return self.send_bytes(204, None, b"")
        path = urllib.parse.urlsplit(self.path).path
        methods = self.ROUTES.get(path)
        arg = None
        if methods is None and path.startswith("/v1/models/") and path.count("/") == 3 and len(path) > 11:
            methods, arg = {"GET": "v1_model"}, urllib.parse.unquote(path[11:])
        if methods is None and path in self.UNSUPPORTED:
            methods = {self.UNSUPPORTED[path]: "unsupported"}
        if methods is None:
            alt = path[:-1] if path.endswith("/") else path + "/"
            if alt in self.ROUTES and path != "/":
                return self.send_bytes(301 if self.command == "GET" else 307, "text/html; charset=utf-8", b"",
                                       [("Location", alt)])
            return self.send_bytes(404, "text/plain", b"404 page not found")
        if self.command not in methods:
            return self.send_bytes(405, "text/plain", b"405 method not allowed", [("Allow", ", ".join(methods))])
        try:
            getattr(self, "h_" + methods[self.command])(*([arg] if arg is not None else []))
        except HTTPFail as e:
            self.send_gin_json(e.status, {"error": e.message})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = dispatch

    # --- native API ---
    def h_root(self):
        self.send_bytes(200, "text/plain; charset=utf-8", b"Ollama is running")

    def h_version(self):
        self.send_gin_json(200, {"version": VERSION})

    def h_tags(self):
        self.send_gin_json(200, {"models": [self.front.model.list_entry()]})

    def h_ps(self):
        self.send_gin_json(200, self.front.ps())

    def h_show(self):
        req, _ = decode_request(self.read_body(), "ShowRequest")
        self.send_gin_json(200, self.front.show(req), floats=True)

    def h_unsupported(self):
        self.read_body()
        raise HTTPFail(501, "%s is not supported by this Ollama-compatible test front" % self.path)

    def h_chat(self):
        req, raw = decode_request(self.read_body(), "ChatRequest")
        self.respond_native(req, *self.front.chat(req, raw, self.alive), chat=True)

    def h_generate(self):
        req, raw = decode_request(self.read_body(), "GenerateRequest")
        self.respond_native(req, *self.front.generate(req, raw, self.alive), chat=False)

    def respond_native(self, req, immediate, gen, chat):
        if immediate is not None:
            return self.send_gin_json(200, immediate)
        if req.get("stream") is False:
            return self.send_gin_json(200, merge_chunks(gen, chat))
        started = False
        try:
            for res in gen:
                if not started:
                    self.start_stream("application/x-ndjson")
                    started = True
                self.write_chunk(go_json(res) + "\n")
        except HTTPFail as e:
            if not started:
                return self.send_bytes(e.status, "application/json", go_json({"error": e.message}).encode())
            self.write_chunk(go_json({"error": e.message}) + "\n")
        except (BrokenPipeError, ConnectionResetError):
            gen.close()
            self.close_connection = True
            return
        if not started:
            self.start_stream("application/x-ndjson")
        self.wfile.write(b"0\r\n\r\n")

    # --- OpenAI compatibility ---
    def h_v1_models(self):
        m = self.front.model
        self.send_encoder_json(200, {"object": "list", "data": [
            {"id": m.name, "object": "model", "created": m.modified_ns // 10**9, "owned_by": m.parsed[1]}]})

    def h_v1_model(self, name):
        try:
            self.front.show({"model": name})
        except HTTPFail as e:
            return self.send_encoder_json(e.status, oai_error(e.status, e.message))
        parsed = parse_name(name)
        self.send_encoder_json(200, {"id": name, "object": "model", "created": self.front.model.modified_ns // 10**9,
                                     "owned_by": parsed[1] if parsed else ""})

    def h_v1_chat(self):
        try:
            r, _ = decode_request(self.read_body(), "ChatCompletionRequest", native=False)
            if not r.get("messages"):
                raise HTTPFail(400, "[] is too short - 'messages'")
            req, raw = from_chat_request(r)
        except HTTPFail as e:
            return self.send_gin_json(e.status, oai_error(e.status, e.message))
        cid = "chatcmpl-%d" % (time.time_ns() // 1000 % 999)
        try:
            _, gen = self.front.chat(req, raw, self.alive)
            if not req["stream"]:
                return self.send_encoder_json(200, to_chat_completion(cid, merge_chunks(gen, True)))
        except HTTPFail as e:
            return self.send_encoder_json(e.status, oai_error(e.status, e.message))
        include_usage = bool((r.get("stream_options") or {}).get("include_usage"))
        started, created = False, None
        try:
            for res in gen:
                if not started:
                    self.start_stream("text/event-stream")
                    started, created = True, unix_of(res["created_at"])
                    first = True
                if not (res["done"] and not first and res["message"]["content"] == ""):
                    delta = {"role": "assistant"} if first else {}
                    delta["content"] = res["message"]["content"]
                    self.write_chunk("data: %s\n\n" % go_json(chunk(cid, created, res, delta)))
                    first = False
                if res["done"]:
                    fin = chunk(cid, created, res, {}, res.get("done_reason") or "stop")
                    self.write_chunk("data: %s\n\n" % go_json(fin))
                    if include_usage:
                        fin.update(choices=[], usage=usage(res))
                        self.write_chunk("data: %s\n\n" % go_json(fin))
                    self.write_chunk("data: [DONE]\n\n")
        except HTTPFail as e:
            if not started:
                return self.send_encoder_json(e.status, oai_error(e.status, e.message))
            self.write_chunk("data: %s\n\n" % go_json(chunk(cid, created, {"model": ""}, {"content": ""})))
        except (BrokenPipeError, ConnectionResetError):
            gen.close()
            self.close_connection = True
            return
        if not started:
            self.start_stream("text/event-stream")
        self.wfile.write(b"0\r\n\r\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description="Ollama-compatible HTTP front for llama-server")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=11434)
    ap.add_argument("--llama-url", required=True, help="base URL of a running llama-server")
    ap.add_argument("--model", default="gemma3:270m", help="the one model name this front serves")
    ap.add_argument("--gguf", help="GGUF path for /api/show metadata (default: asked from llama-server)")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = ap.parse_args(argv)
    up = Upstream(args.llama_url)
    gguf = args.gguf
    if not gguf:
        try:
            gguf = up.call("GET", "/props").get("model_path")
        except HTTPFail:
            gguf = None
    Handler.front = Front(Model(args.model, gguf), up)
    Handler.verbose = args.verbose
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    sys.stderr.write("[ollama-front] listening on http://%s:%d (model %s, llama-server %s)\n"
                     % (args.host, server.server_address[1], args.model, args.llama_url))
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
