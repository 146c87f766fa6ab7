"""Request decoding with encoding/json's error texts.

Ollama's handlers bind request bodies with encoding/json; a malformed body or
a field of the wrong type is answered 400 with Go's own message (for example
`invalid character 'x' looking for beginning of value` or `json: cannot
unmarshal number into Go struct field ChatRequest.model of type string`).
These functions reproduce those messages for the front's routes.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import HTTPFail
from .gojson import go_quote

def _go_char(c: str) -> str:
    return "'\\''" if c == "'" else "'\"'" if c == '"' else "'" + go_quote(c)[1:-1] + "'"


def go_syntax_error(text: str, eof: str = "unexpected EOF") -> None:
    """Raise the error encoding/json reports for the first invalid JSON value.

    A Decoder says "unexpected EOF" for a value cut short, json.Unmarshal
    "unexpected end of JSON input" (pass it as `eof`)."""
    n = len(text)
    ws = " \t\r\n"

    def skip(i: int) -> int:
        while i < n and text[i] in ws:
            i += 1
        return i

    def bad(i: int, ctx: str) -> None:
        raise HTTPFail(400, "invalid character %s %s" % (_go_char(text[i]), ctx))

    def need(i: int) -> None:
        if i >= n:
            raise HTTPFail(400, eof)

    def value(i: int, ctx: str = "looking for beginning of value") -> int:
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

    def string(i: int) -> int:
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
    raise HTTPFail(400, eof)


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
                   "tools": (list, "[]api.Tool"), "logprobs": (bool, "bool"), "top_logprobs": (int, "int")}


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)  # NaN and Infinity are Python's, not Go's


def _finite(text: str) -> float:
    """A JSON number as float64; one past float64's range is refused as Go refuses it."""
    value = float(text)
    if math.isinf(value):
        raise HTTPFail(400, "json: cannot unmarshal number %s into Go value of type float64" % text)
    return value


def first_value(body: bytes, empty_message: str) -> tuple[Any, str, int]:
    """The first JSON value of a body, as json.Decoder reads it: (value, text, where it starts).

    An empty body is 400 `empty_message` (gin's handlers say "missing request
    body", its ShouldBindJSON alone "EOF"); invalid JSON is 400 with Go's
    syntax error. Nesting deeper than Python's recursion limit is refused as
    Go refuses nesting past 10000 levels."""
    text = body.decode("utf-8", errors="replace")
    if not text.strip(" \t\r\n"):
        raise HTTPFail(400, empty_message)
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        try:
            obj, _ = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite).raw_decode(text, start)
        except ValueError:
            go_syntax_error(text)
    except RecursionError:
        raise HTTPFail(400, "exceeded max depth")
    return obj, text, start


def decode_request(body: bytes, struct_name: str, native: bool = True) -> tuple[dict[str, Any], dict[str, str]]:
    """Decode a request body as Ollama's gin handlers do; returns (dict, raw field texts)."""
    obj, text, start = first_value(body, "missing request body")
    dec = json.JSONDecoder()
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


def keep_alive_is_zero(v: Any) -> bool:
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float, str)):
        if v is not None:
            raise HTTPFail(400, "Unsupported type: '%s'" % {bool: "bool", list: "[]interface {}", dict: "map[string]interface {}"}[type(v)])
        return False
    if isinstance(v, str):
        if not re.fullmatch(r"[-+]?(0|((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)", v):
            raise HTTPFail(400, "time: invalid duration %s" % go_quote(v))
        return not re.search(r"[1-9]", v)
    return v == 0



def go_type_name(v: Any) -> str:
    """The Go type name encoding/json gives a decoded interface{} value."""
    return {type(None): "<nil>", bool: "bool", int: "float64", float: "float64", str: "string",
            list: "[]interface {}", dict: "map[string]interface {}"}[type(v)]



def go_unmarshal(text: str) -> Any:
    """json.Unmarshal of a whole text: its value, or 400 with Go's error.

    Errors carry no context; callers wrap them as Go does (for example
    "failed to parse function call arguments: ...")."""
    eof = "unexpected end of JSON input"
    if not text.strip(" \t\r\n"):
        raise HTTPFail(400, eof)
    start = len(text) - len(text.lstrip(" \t\r\n"))
    try:
        try:
            value, end = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite).raw_decode(text, start)
        except ValueError:
            go_syntax_error(text, eof)
    except RecursionError:
        raise HTTPFail(400, "exceeded max depth")
    rest = text[end:].lstrip(" \t\r\n")
    if rest:
        raise HTTPFail(400, "invalid character %s after top-level value" % _go_char(rest[0]))
    return value


# Go types for check_fields: (kind, Go type name[, element or struct fields]).
STRING = ("string", "string")
BOOL = ("bool", "bool")
INT = ("int", "int")
FLOAT64 = ("float64", "float64")
ANY = ("any", "interface {}")
MAP = ("map", "map[string]interface {}")
STRINGS = ("slice", "[]string", STRING)


def struct(go_name: str, fields: dict[str, tuple]) -> tuple:
    """A Go struct type for check_fields: its qualified name and its fields' types."""
    return ("struct", go_name, fields)


def slice_of(elem: tuple) -> tuple:
    """A Go slice type for check_fields."""
    return ("slice", "[]" + elem[1], elem)


def type_error(value: str, struct_name: str, path: tuple[str, ...], go_type: str) -> HTTPFail:
    """encoding/json's UnmarshalTypeError with its struct-field context."""
    if not struct_name and not path:
        return HTTPFail(400, "json: cannot unmarshal %s into Go value of type %s" % (value, go_type))
    return HTTPFail(400, "json: cannot unmarshal %s into Go struct field %s.%s of type %s"
                    % (value, struct_name, ".".join(path), go_type))


def check_fields(obj: dict[str, Any], fields: dict[str, tuple], struct_name: str,
                 path: tuple[str, ...] = ()) -> None:
    """Check a decoded object against a Go struct's field types; 400 on the first mismatch.

    The message is the one encoding/json gives: the innermost struct's name,
    the field path from the decoded root, and the Go type. A null is never
    an error (encoding/json leaves the field as it was)."""
    for key, val in obj.items():
        kind = fields.get(key)
        if kind is not None and val is not None:
            _check(val, kind, struct_name, path + (key,))


def _check(val: Any, kind: tuple, struct_name: str, path: tuple[str, ...]) -> None:
    tag, go_type = kind[0], kind[1]
    if tag == "any":
        return
    if tag == "slice" and isinstance(val, list):
        for v in val:
            if v is not None:
                _check(v, kind[2], struct_name, path)
        return
    if tag == "struct" and isinstance(val, dict):
        check_fields(val, kind[2], go_type.rpartition(".")[2], path)
        return
    if tag == "int" and isinstance(val, float):
        raise type_error("number %s" % repr(val), struct_name, path, go_type)
    ok = {"string": lambda: isinstance(val, str),
          "bool": lambda: isinstance(val, bool),
          "int": lambda: isinstance(val, int) and not isinstance(val, bool),
          "float64": lambda: isinstance(val, (int, float)) and not isinstance(val, bool),
          "map": lambda: isinstance(val, dict)}.get(tag, lambda: False)()
    if not ok:
        raise type_error(JSON_KIND[type(val)], struct_name, path, go_type)
