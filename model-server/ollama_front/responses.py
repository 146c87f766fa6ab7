"""OpenAI's Responses API (`POST /v1/responses`), as Ollama serves it.

Ollama's middleware/openai.go (ResponsesMiddleware, ResponsesWriter) and
openai/responses.go: the request is bound (`bind`, with encoding/json's and
the custom unmarshalers' error texts), turned into an Ollama chat request
(`to_chat_request`, FromResponsesRequest) and run through ChatHandler. A
whole answer becomes one `response` object (`Converter.response`,
ToResponse); a stream becomes the Responses SSE events
(`Converter.process`, ResponsesStreamConverter): response.created,
response.in_progress, the message item's added/delta/done events and
response.completed.

Errors before the chat request exists are gin's JSON in OpenAI's error
shape; errors from ChatHandler (the model, tools and thinking refusals, the
runner) come through the writer's encoder, as on /v1/chat/completions.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

from .decode import (ANY, BOOL, FLOAT64, INT, MAP, STRING, STRINGS, JSON_KIND, check_fields, first_value,
                     go_unmarshal, slice_of, struct, type_error)
from .openai_chat import to_tool_calls
from .errors import HTTPFail
from .gojson import GoNumber, go_json, go_quote, unix_of

TOOL = struct("openai.ResponsesTool", {"type": STRING, "name": STRING, "description": STRING, "strict": BOOL,
                                       "parameters": MAP})
TOOL[2]["tools"] = slice_of(TOOL)
REQUEST = struct("openai.ResponsesRequest", {
    "model": STRING, "background": BOOL, "conversation": ANY, "include": STRINGS,
    "instructions": STRING, "max_output_tokens": INT,
    "reasoning": struct("openai.ResponsesReasoning", {"effort": STRING, "generate_summary": STRING,
                                                      "summary": STRING}),
    "temperature": FLOAT64,
    "text": struct("openai.ResponsesText", {"format": struct("openai.ResponsesTextFormat", {
        "type": STRING, "name": STRING, "schema": ANY, "strict": BOOL})}),
    "top_p": FLOAT64, "truncation": STRING, "tools": slice_of(TOOL), "stream": BOOL,
})
ITEM_HEAD = ('struct { Type string "json:\\"type\\""; Role string "json:\\"role\\"" }',
             {"type": STRING, "role": STRING})
CONTENT_HEAD = ('struct { Type string "json:\\"type\\"" }', {"type": STRING})
CONTENT_TYPES = {
    "input_text": ("ResponsesTextContent", {"type": STRING, "text": STRING}),
    "output_text": ("ResponsesOutputTextContent", {"type": STRING, "text": STRING}),
    "input_image": ("ResponsesImageContent", {"type": STRING, "detail": STRING, "file_id": STRING,
                                              "image_url": STRING}),
    "input_file": ("ResponsesFileContent", {"type": STRING, "file_data": STRING, "file_id": STRING,
                                            "file_url": STRING, "filename": STRING}),
}
ITEM_TYPES = {
    "message": ("", {"type": STRING, "role": STRING}),
    "function_call": ("ResponsesFunctionCall", {"id": STRING, "type": STRING, "call_id": STRING, "name": STRING,
                                                "arguments": STRING}),
    "function_call_output": ("", {"type": STRING, "call_id": STRING}),
    "reasoning": ("ResponsesReasoningInput", {
        "id": STRING, "type": STRING, "encrypted_content": STRING,
        "summary": slice_of(struct("openai.ResponsesReasoningSummary", {"type": STRING, "text": STRING}))}),
    "web_search_call": ("ResponsesWebSearchCall", {
        "id": STRING, "type": STRING, "status": STRING,
        "action": struct("openai.ResponsesWebSearchAction", {"type": STRING, "query": STRING})}),
}
TOOL_PARAMETERS = {"type": STRING, "required": STRINGS}  # api.ToolFunctionParameters' plainly typed fields
EFFORTS = {"none": False, "minimal": "low", "low": "low", "medium": "medium", "high": "high", "max": "max",
           "xhigh": "max", "ultra": "max"}


class KeepOrder(dict):
    """A JSON object Go writes as it came (a json.RawMessage): sort_maps leaves its keys alone."""


@dataclass
class Request:
    """A bound ResponsesRequest: the decoded body, its input items, and its text.format.schema
    decoded with number texts kept (Go echoes that json.RawMessage as it came)."""

    body: dict[str, Any]
    items: list[dict[str, Any]] = field(default_factory=list)
    schema: Any = None

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True


# === binding (ShouldBindJSON and the custom unmarshalers) ======================

def bind(body: bytes) -> Request:
    """c.ShouldBindJSON(&ResponsesRequest): 400 with Go's error text when it fails."""
    obj, text, start = first_value(body, "EOF")
    if obj is None:
        return Request({})
    if not isinstance(obj, dict):
        raise type_error(JSON_KIND[type(obj)], "", (), "openai.ResponsesRequest")
    # ResponsesInput's own unmarshaler aborts decoding, so its error wins over a field's type error.
    items = _input_items(obj.get("input"))
    check_fields(obj, REQUEST[2], "ResponsesRequest")
    echo, _ = json.JSONDecoder(parse_float=GoNumber).raw_decode(text, start)
    schema = ((echo.get("text") or {}).get("format") or {}).get("schema")
    return Request(obj, items, keep_order(schema))


def _unmarshal_error(value: Any, go_type: str) -> HTTPFail:
    return type_error(JSON_KIND[type(value)], "", (), go_type)


def _input_items(value: Any) -> list[dict[str, Any]]:
    """ResponsesInput.UnmarshalJSON: a string (kept in the body) or an array of input items."""
    if value is None or isinstance(value, str):
        return []
    if not isinstance(value, list):
        raise HTTPFail(400, "input must be a string or array: %s"
                       % _unmarshal_error(value, "[]json.RawMessage").message)
    items = []
    for i, raw in enumerate(value):
        try:
            items.append(_input_item(raw))
        except HTTPFail as e:
            raise HTTPFail(400, "input[%d]: %s" % (i, e.message))
    return items


def _head(raw: Any, head: tuple[str, dict[str, tuple]]) -> dict[str, Any]:
    """Unmarshal into a small anonymous struct (the type peek of a union)."""
    if not isinstance(raw, dict):
        raise _unmarshal_error(raw, head[0])
    check_fields(raw, head[1], "")
    return raw


def _input_item(raw: Any) -> dict[str, Any]:
    """unmarshalResponsesInputItem: the item, its type resolved, its content parsed."""
    head = _head(raw, ITEM_HEAD)
    kind = head.get("type") or ("message" if head.get("role") else "")
    if kind not in ITEM_TYPES:
        if not kind:
            raise HTTPFail(400, "input item missing required 'type' field")
        raise HTTPFail(400, "unknown input item type: %s" % go_quote(kind))
    name, fields = ITEM_TYPES[kind]
    check_fields(raw, fields, name)
    item = dict(raw, type=kind)
    if kind == "message":
        content = raw.get("content")
        if isinstance(content, str) or ("content" in raw and content is None):
            item["content"] = [{"type": "input_text", "text": content or ""}]
        elif "content" in raw:
            item["content"] = _content_list(content, "content")
    elif kind == "function_call_output":
        output = raw.get("output")
        item["output_items"] = None
        if isinstance(output, list):
            item["output_items"] = _content_list(output, "output")
            item["output"] = "".join(c.get("text") or "" for c in item["output_items"]
                                     if c["type"] in ("input_text", "output_text"))
        elif output is not None and not isinstance(output, str):
            raise HTTPFail(400, "output must be a string or array: %s"
                           % _unmarshal_error(output, "[]json.RawMessage").message)
        else:
            item["output"] = output or ""
    return item


def _content_list(value: Any, what: str) -> list[dict[str, Any]]:
    """An array of Responses content items (unmarshalResponsesContent each)."""
    if not isinstance(value, list):
        raise HTTPFail(400, "%s must be a string or array: %s"
                       % (what, _unmarshal_error(value, "[]json.RawMessage").message))
    out = []
    for i, raw in enumerate(value):
        try:
            head = _head(raw, CONTENT_HEAD)
            kind = head.get("type") or ""
            if kind not in CONTENT_TYPES:
                raise HTTPFail(400, "unknown content type: %s" % kind)
            check_fields(raw, CONTENT_TYPES[kind][1], CONTENT_TYPES[kind][0])
            out.append(raw)
        except HTTPFail as e:
            raise HTTPFail(400, "%s[%d]: %s" % (what, i, e.message))
    return out


# === FromResponsesRequest ======================================================

def to_chat_request(r: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """openai.FromResponsesRequest: (the chat request for Front.chat, its raw format)."""
    b = r.body
    msgs: list[dict[str, Any]] = []
    if b.get("instructions"):
        msgs.append({"role": "system", "content": b["instructions"]})
    if isinstance(b.get("input"), str) and b["input"]:
        msgs.append({"role": "user", "content": b["input"]})
    pending_thinking = ""
    for i, item in enumerate(r.items):
        kind = item["type"]
        if kind == "reasoning":
            pending_thinking = item.get("encrypted_content") or ""
        elif kind == "message":
            msg = {"role": item.get("role") or "", "content": _content_text(item.get("content") or [])}
            if msg["role"] == "assistant" and pending_thinking:
                msg["thinking"], pending_thinking = pending_thinking, ""
            following = r.items[i + 1] if i + 1 < len(r.items) else None
            call_id = following.get("call_id") if following and following["type"] == "function_call_output" else ""
            if msg["role"] == "assistant" and call_id and msgs and _merge_into_call(msgs[-1], msg, call_id):
                continue
            msgs.append(msg)
        elif kind == "function_call":
            args: Any = {}
            if item.get("arguments"):
                try:
                    args = go_unmarshal(item["arguments"])
                except HTTPFail as e:
                    raise HTTPFail(400, "failed to parse function call arguments: %s" % e.message)
                if not isinstance(args, dict) and args is not None:
                    raise HTTPFail(400, "failed to parse function call arguments: %s"
                                   % _unmarshal_error(args, "map[string]interface {}").message)
            call = {"id": item.get("call_id") or "", "function": {"name": item.get("name") or "", "arguments": args}}
            if msgs and msgs[-1]["role"] == "assistant":
                msgs[-1].setdefault("tool_calls", []).append(call)
                if pending_thinking:
                    msgs[-1]["thinking"], pending_thinking = pending_thinking, ""
            else:
                msg = {"role": "assistant", "content": "", "tool_calls": [call]}
                if pending_thinking:
                    msg["thinking"], pending_thinking = pending_thinking, ""
                msgs.append(msg)
        elif kind == "function_call_output":
            content = item["output"]
            if item.get("output_items"):
                content = _content_text(item["output_items"])
            msgs.append({"role": "tool", "content": content, "tool_call_id": item.get("call_id") or ""})
    if pending_thinking:
        msgs.append({"role": "assistant", "content": "", "thinking": pending_thinking})
    for m in msgs:  # ChatHandler's api.Message decoding lowercases roles
        m["role"] = m["role"].lower()

    opts: dict[str, Any] = {"temperature": b["temperature"] if b.get("temperature") is not None else 1.0}
    if b.get("top_p") is not None:
        opts["top_p"] = b["top_p"]
    if b.get("max_output_tokens") is not None:
        opts["num_predict"] = b["max_output_tokens"]
    effort = (b.get("reasoning") or {}).get("effort") or ""
    if effort and effort not in EFFORTS:
        raise HTTPFail(400, 'invalid reasoning value: %s (must be "minimal", "low", "medium", "high", "xhigh", '
                            '"ultra", "max", or "none")' % go_quote(effort))
    tools = []
    has_web_search = any(t.get("type") == "web_search" for t in b.get("tools") or [] if t)
    for t in b.get("tools") or []:
        if t and t.get("type") == "web_search":
            tools.append({"type": "function", "function": {"name": "web_search"}})
            continue
        tools += [x for x in _convert_tools(t or {}) if not (has_web_search and x["function"]["name"] == "web_search")]
    fmt = None
    text_format = ((b.get("text") or {}).get("format") or {})
    if text_format.get("type") == "json_schema" and "schema" in text_format:
        fmt = go_json(text_format["schema"])
    req = {"model": b.get("model") or "", "messages": msgs, "options": opts, "stream": r.stream,
           "tools": tools or None, "think": EFFORTS.get(effort), "_keep_alive_zero": False}
    return req, {"format": fmt}


def _merge_into_call(last: dict[str, Any], msg: dict[str, Any], call_id: str) -> bool:
    """An assistant message replayed between a function_call and its output joins the call's message."""
    if last["role"] != "assistant" or not any(c["id"] == call_id for c in last.get("tool_calls") or []):
        return False
    if last["content"] and msg["content"]:
        last["content"] += "\n"
    last["content"] += msg["content"]
    if msg.get("thinking"):
        last["thinking"] = msg["thinking"]
    return True


def _content_text(contents: list[dict[str, Any]]) -> str:
    """convertResponsesContent: the text parts joined; images checked (and dropped: no vision); no files."""
    text = []
    for c in contents:
        if c["type"] in ("input_text", "output_text"):
            text.append(c.get("text") or "")
        elif c["type"] == "input_image" and c.get("image_url"):
            decode_image_url(c["image_url"])
        elif c["type"] == "input_file":
            raise HTTPFail(400, "file inputs are not currently supported")
    return "".join(text)


def decode_image_url(url: str) -> bytes:
    """openai.decodeImageURL: base64 data URLs only."""
    if url.startswith(("http://", "https://")):
        raise HTTPFail(400, "image URLs are not currently supported, please use base64 encoded data instead")
    for prefix in ["data:;base64,"] + ["data:image/%s;base64," % t for t in ("jpeg", "jpg", "png", "webp")]:
        if url.startswith(prefix):
            try:
                return base64.b64decode(url[len(prefix):], validate=True)
            except (binascii.Error, ValueError):
                break
    raise HTTPFail(400, "invalid image input")


def _convert_tools(t: dict[str, Any]) -> list[dict[str, Any]]:
    """convertTools: one tool, or a namespace's members with namespace-qualified names."""
    if t.get("type") != "namespace":
        params = t.get("parameters")
        if isinstance(params, dict):
            try:
                check_fields(params, TOOL_PARAMETERS, "ToolFunctionParameters")
            except HTTPFail as e:
                raise HTTPFail(400, "failed to unmarshal tool parameters: %s" % e.message)
        return [{"type": t.get("type") or "", "function": {"name": t.get("name") or "",
                                                           "description": t.get("description") or "",
                                                           "parameters": params or {}}}]
    out = []
    prefix = (t.get("name") or "") + "."
    for member in t.get("tools") or []:
        for tool in _convert_tools(member or {}):
            if prefix != "." and not tool["function"]["name"].startswith(prefix):
                tool["function"]["name"] = prefix + tool["function"]["name"]
            out.append(tool)
    return out


# === answers ===================================================================

def sort_maps(obj: Any) -> Any:
    """Go writes a map[string]any with sorted keys: sort every object but KeepOrder ones."""
    if isinstance(obj, KeepOrder):
        return obj
    if isinstance(obj, dict):
        return {k: sort_maps(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list):
        return [sort_maps(v) for v in obj]
    return obj


def keep_order(obj: Any) -> Any:
    """A decoded json.RawMessage: every object in it keeps its key order."""
    if isinstance(obj, dict):
        return KeepOrder((k, keep_order(v)) for k, v in obj.items())
    if isinstance(obj, list):
        return [keep_order(v) for v in obj]
    return obj


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _usage(res: dict[str, Any]) -> dict[str, Any]:
    p, c = res.get("prompt_eval_count", 0), res.get("eval_count", 0)
    return {"input_tokens": p, "output_tokens": c, "total_tokens": p + c,
            "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}


class Converter:
    """One /v1/responses answer: ids, the request's echoes, and the stream's state."""

    def __init__(self, r: Request) -> None:
        self.r = r
        self.response_id = "resp_%d" % random.randrange(999999)
        self.item_id = "msg_%d" % random.randrange(999999)
        self.seq = 0
        self.first = True
        self.text: list[str] = []
        self.content_started = False
        self.calls_sent = False
        self.output_index = 0
        self.call_items: list[dict[str, Any]] = []

    # --- echoes of the request ---
    def _float(self, key: str) -> Any:
        v = self.r.body.get(key)
        return v if v is not None else 1.0

    def _format_fields(self) -> dict[str, Any] | None:
        fmt = (self.r.body.get("text") or {}).get("format")
        if not isinstance(fmt, dict):
            return None
        out: dict[str, Any] = {"type": fmt.get("type") or ""}
        if fmt.get("name"):
            out["name"] = fmt["name"]
        if "schema" in fmt:
            out["schema"] = self.r.schema
        if fmt.get("strict") is not None:
            out["strict"] = fmt["strict"]
        return out

    def _tool(self, t: dict[str, Any], nested: bool) -> dict[str, Any]:
        out = {"type": t.get("type") or "", "name": t.get("name") or "", "description": t.get("description"),
               "strict": t.get("strict"), "parameters": sort_maps(t.get("parameters"))}
        if nested and t.get("tools"):
            out["tools"] = [self._tool(m or {}, True) for m in t["tools"]]
        return out

    # --- a whole answer ---
    def response(self, res: dict[str, Any]) -> dict[str, Any]:
        """openai.ToResponse of the merged chat answer, completed_at set as the writer does."""
        e, reasoning = self.r.body, self.r.body.get("reasoning") or {}
        reason_out = None
        if reasoning.get("effort") or reasoning.get("summary"):
            reason_out = {k: reasoning[k] for k in ("effort", "summary") if reasoning.get(k)}
        return {
            "id": self.response_id, "object": "response", "created_at": unix_of(res["created_at"]),
            "completed_at": int(time.time()), "status": "completed", "incomplete_details": None,
            "model": e.get("model") or "", "previous_response_id": None, "instructions": e.get("instructions") or None,
            "output": [{"id": "fc_%s_%d" % (self.response_id, i), "type": "function_call", "status": "completed",
                        "call_id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
                       for i, c in enumerate(to_tool_calls(res["message"].get("tool_calls")))]
            or [{"id": self.item_id, "type": "message", "status": "completed", "role": "assistant",
                 "content": [_text_part(res["message"]["content"])]}],
            "error": None, "tools": [self._tool(t or {}, True) for t in e.get("tools") or []],
            "tool_choice": "auto", "truncation": e.get("truncation") or "disabled", "parallel_tool_calls": True,
            "text": {"format": self._format_fields() or {"type": "text"}}, "top_p": self._float("top_p"),
            "presence_penalty": 0, "frequency_penalty": 0, "top_logprobs": 0, "temperature": self._float("temperature"),
            "reasoning": reason_out, "usage": _usage(res), "max_output_tokens": e.get("max_output_tokens"),
            "max_tool_calls": None, "store": False, "background": e.get("background") is True,
            "service_tier": "default", "metadata": {}, "safety_identifier": None, "prompt_cache_key": None,
        }

    # --- a stream ---
    def _object(self, status: str, output: list[Any] | None, usage: dict[str, Any] | None) -> dict[str, Any]:
        """buildResponseObject: the response as the stream's events carry it (a Go map)."""
        e, reasoning = self.r.body, self.r.body.get("reasoning") or {}
        reason_out = None
        if reasoning.get("effort") or reasoning.get("summary"):
            reason_out = {"effort": reasoning.get("effort") or None, "summary": reasoning.get("summary") or None}
        return {
            "id": self.response_id, "object": "response", "created_at": int(time.time()), "completed_at": None,
            "status": status, "incomplete_details": None, "model": e.get("model") or "",
            "previous_response_id": None, "instructions": e.get("instructions") or None, "output": output,
            "error": None, "tools": [self._tool(t or {}, False) for t in e.get("tools") or []],
            "tool_choice": "auto", "truncation": e.get("truncation") or "disabled", "parallel_tool_calls": True,
            "text": {"format": self._format_fields() or {"type": "text"}}, "top_p": self._float("top_p"),
            "presence_penalty": 0, "frequency_penalty": 0, "top_logprobs": 0, "temperature": self._float("temperature"),
            "reasoning": reason_out, "usage": usage, "max_output_tokens": e.get("max_output_tokens"),
            "max_tool_calls": None, "store": False, "background": e.get("background") is True,
            "service_tier": "default", "metadata": {}, "safety_identifier": None, "prompt_cache_key": None,
        }

    def _event(self, kind: str, data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        data.update(type=kind, sequence_number=self.seq)
        self.seq += 1
        return kind, sort_maps(data)

    def _message_item(self, status: str) -> dict[str, Any]:
        content = [_text_part("".join(self.text))] if status == "completed" else []
        return {"id": self.item_id, "type": "message", "status": status, "role": "assistant", "content": content}

    def process(self, res: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """ResponsesStreamConverter.Process: the events one chat chunk makes."""
        events = []
        if self.first:
            self.first = False
            events.append(self._event("response.created", {"response": self._object("in_progress", [], None)}))
            events.append(self._event("response.in_progress", {"response": self._object("in_progress", [], None)}))
        calls = to_tool_calls(res["message"].get("tool_calls"))
        for i, c in enumerate(calls):
            index = self.output_index + (1 if self.content_started else 0) + i
            fc_id = "fc_%d_%d" % (random.randrange(999999), i)
            item = {"id": fc_id, "type": "function_call", "status": "completed", "call_id": c["id"],
                    "name": c["function"]["name"], "arguments": c["function"]["arguments"]}
            self.call_items.append(item)
            events.append(self._event("response.output_item.added", {
                "output_index": index, "item": dict(item, status="in_progress", arguments="")}))
            events.append(self._event("response.function_call_arguments.delta", {
                "item_id": fc_id, "output_index": index, "delta": item["arguments"]}))
            events.append(self._event("response.function_call_arguments.done", {
                "item_id": fc_id, "output_index": index, "arguments": item["arguments"]}))
            events.append(self._event("response.output_item.done", {"output_index": index, "item": item}))
        if calls:
            self.output_index += len(calls)
            self.calls_sent = True
        content = res["message"]["content"] if not self.calls_sent else ""
        if content:
            if not self.content_started:
                self.content_started = True
                events.append(self._event("response.output_item.added",
                                          {"output_index": 0, "item": self._message_item("in_progress")}))
                events.append(self._event("response.content_part.added", {
                    "item_id": self.item_id, "output_index": 0, "content_index": 0, "part": _text_part("")}))
            self.text.append(content)
            events.append(self._event("response.output_text.delta", {
                "item_id": self.item_id, "output_index": 0, "content_index": 0, "delta": content, "logprobs": []}))
        if res["done"]:
            output = None
            if self.content_started:
                text = "".join(self.text)
                events.append(self._event("response.output_text.done", {
                    "item_id": self.item_id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}))
                events.append(self._event("response.content_part.done", {
                    "item_id": self.item_id, "output_index": 0, "content_index": 0, "part": _text_part(text)}))
                events.append(self._event("response.output_item.done",
                                          {"output_index": 0, "item": self._message_item("completed")}))
                output = [self._message_item("completed")]
            if self.call_items:
                output = (output or []) + self.call_items
            response = self._object("completed", output, _usage(res))
            response["completed_at"] = int(time.time())
            events.append(self._event("response.completed", {"response": response}))
        return events
