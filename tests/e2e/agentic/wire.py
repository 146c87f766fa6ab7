"""Readers for what went over the wire: Anthropic Messages SSE streams and a
small JSON Schema checker for tool inputs.

The checker knows the keywords tool schemas use (types, properties, required,
additionalProperties, enum/const, numeric and length bounds, items, anyOf,
oneOf, allOf); a schema with any other assertion keyword is reported as an
error rather than passed unchecked.
"""

import json

ANNOTATIONS = {"$schema", "$id", "$comment", "title", "description", "default", "examples", "deprecated",
               "readOnly", "writeOnly", "format"}
TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool)
    or isinstance(v, float) and v.is_integer(),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def schema_errors(value, schema, where="$"):
    """Violations of `schema` by `value`, as readable strings (empty when valid)."""
    if schema is True or schema == {}:
        return []
    if schema is False:
        return ["%s: not allowed" % where]
    errs = []
    unknown = set(schema) - ANNOTATIONS - {
        "type", "properties", "required", "additionalProperties", "enum", "const", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "items", "minItems", "maxItems",
        "anyOf", "oneOf", "allOf", "propertyNames"}
    if unknown:
        return ["%s: schema keywords this checker does not know: %s" % (where, sorted(unknown))]
    ty = schema.get("type")
    if ty is not None:
        types = ty if isinstance(ty, list) else [ty]
        if not any(TYPES[t](value) for t in types):
            return ["%s: %r is not of type %s" % (where, value, ty)]
    if "enum" in schema and value not in schema["enum"]:
        errs.append("%s: %r not in %r" % (where, value, schema["enum"]))
    if "const" in schema and value != schema["const"]:
        errs.append("%s: %r != const %r" % (where, value, schema["const"]))
    if TYPES["number"](value):
        for key, bad in (("minimum", lambda b: value < b), ("maximum", lambda b: value > b),
                         ("exclusiveMinimum", lambda b: value <= b), ("exclusiveMaximum", lambda b: value >= b)):
            if key in schema and bad(schema[key]):
                errs.append("%s: %r violates %s %r" % (where, value, key, schema[key]))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append("%s: shorter than %d" % (where, schema["minLength"]))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append("%s: longer than %d" % (where, schema["maxLength"]))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append("%s: fewer than %d items" % (where, schema["minItems"]))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append("%s: more than %d items" % (where, schema["maxItems"]))
        if isinstance(schema.get("items"), (dict, bool)):
            for i, item in enumerate(value):
                errs += schema_errors(item, schema["items"], "%s[%d]" % (where, i))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                errs.append("%s: required property %r missing" % (where, key))
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                errs += schema_errors(v, props[key], "%s.%s" % (where, key))
            elif extra is False:
                errs.append("%s: property %r not allowed" % (where, key))
            elif isinstance(extra, dict):
                errs += schema_errors(v, extra, "%s.%s" % (where, key))
            if "propertyNames" in schema:
                errs += schema_errors(key, schema["propertyNames"], "%s(name %r)" % (where, key))
    for sub in schema.get("allOf", []):
        errs += schema_errors(value, sub, where)
    if "anyOf" in schema and all(schema_errors(value, s, where) for s in schema["anyOf"]):
        errs.append("%s: matches none of anyOf" % where)
    if "oneOf" in schema and sum(not schema_errors(value, s, where) for s in schema["oneOf"]) != 1:
        errs.append("%s: does not match exactly one of oneOf" % where)
    return errs


def sse_events(body):
    """(event name, parsed data) pairs of a text/event-stream body."""
    events = []
    for block in body.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


def anthropic_message_from_sse(body):
    """The message an Anthropic Messages SSE stream describes: its content blocks
    (tool_use inputs parsed from their input_json_delta parts), stop_reason, the
    event types in order (`_events`) and the payloads of error events (`_errors`)."""
    events = sse_events(body)
    kinds = [d.get("type") for _, d in events]
    msg, blocks, errors = {}, {}, []
    for _, d in events:
        t = d.get("type")
        if t == "message_start":
            msg = dict(d["message"])
        elif t == "content_block_start":
            blocks[d["index"]] = dict(d["content_block"], _json="")
        elif t == "content_block_delta":
            b, delta = blocks[d["index"]], d["delta"]
            if delta["type"] == "text_delta":
                b["text"] = b.get("text", "") + delta["text"]
            elif delta["type"] == "input_json_delta":
                b["_json"] += delta["partial_json"]
            elif delta["type"] == "thinking_delta":
                b["thinking"] = b.get("thinking", "") + delta["thinking"]
        elif t == "message_delta":
            msg.update(d.get("delta", {}))
        elif t == "error":
            errors.append(d["error"])
    content = []
    for i in sorted(blocks):
        b = blocks[i]
        raw = b.pop("_json")
        if b["type"] == "tool_use" and raw:
            b["input"] = json.loads(raw)
        content.append(b)
    msg["content"] = content
    msg["_events"] = kinds
    msg["_errors"] = errors
    return msg
