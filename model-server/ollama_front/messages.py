"""Anthropic's Messages API (`POST /v1/messages`), as Ollama serves it.

Ollama's middleware/anthropic.go (AnthropicMessagesMiddleware,
AnthropicWriter) and anthropic/anthropic.go: the request is bound (`bind`,
with encoding/json's error texts and MessageParam's own unmarshaler),
checked (model, max_tokens, messages), turned into an Ollama chat request
(`to_chat_request`, FromMessagesRequest) and run through ChatHandler with
thinking relaxed: a model that cannot think answers without thinking
instead of refusing. A whole answer becomes one `message` object
(`Converter.message`, ToMessagesResponse); a stream becomes Anthropic's SSE
events (`Converter.process`, StreamConverter): message_start,
content_block_start, content_block_delta, content_block_stop,
message_delta, message_stop.

Errors are Anthropic's `{"type": "error", "error": {"type", "message"},
"request_id"}`, with the error type Ollama gives each status.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from typing import Any

from .decode import (ANY, BOOL, FLOAT64, INT, STRING, STRINGS, JSON_KIND, check_fields, first_value, slice_of,
                     struct, type_error)
from .errors import HTTPFail, anthropic_id
from .gojson import go_json, go_quote

TOOL = struct("anthropic.Tool", {"type": STRING, "name": STRING, "description": STRING, "input_schema": ANY,
                                 "max_uses": INT})
REQUEST = struct("anthropic.MessagesRequest", {
    "model": STRING, "max_tokens": INT, "system": ANY, "stream": BOOL, "temperature": FLOAT64, "top_p": FLOAT64,
    "top_k": INT, "stop_sequences": STRINGS, "tools": slice_of(TOOL),
    "tool_choice": struct("anthropic.ToolChoice", {"type": STRING, "name": STRING,
                                                   "disable_parallel_tool_use": BOOL}),
    "thinking": struct("anthropic.ThinkingConfig", {"type": STRING, "budget_tokens": INT}),
    "metadata": struct("anthropic.Metadata", {"user_id": STRING}),
    "output_config": struct("anthropic.OutputConfig", {"effort": STRING}),
})
MESSAGE_HEAD = 'struct { Role string "json:\\"role\\""; Content json.RawMessage "json:\\"content\\"" }'
BLOCK = struct("anthropic.ContentBlock", {
    "type": STRING, "text": STRING,
    "citations": slice_of(struct("anthropic.Citation", {"type": STRING, "url": STRING, "title": STRING,
                                                        "encrypted_index": STRING, "cited_text": STRING})),
    "source": struct("anthropic.ImageSource", {"type": STRING, "media_type": STRING, "data": STRING,
                                               "url": STRING}),
    "id": STRING, "name": STRING, "tool_use_id": STRING, "content": ANY, "is_error": BOOL,
    "thinking": STRING, "signature": STRING,
})
TOOL_PARAMETERS = {"type": STRING, "required": STRINGS}  # api.ToolFunctionParameters' plainly typed fields
EOF_TEXT = "unexpected end of JSON input"


@dataclass
class Request:
    """A bound MessagesRequest: the decoded body, with every message's content as a list of blocks."""

    body: dict[str, Any]

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True

    @property
    def model(self) -> str:
        return self.body.get("model") or ""


# === binding and the middleware's checks =======================================

def bind(body: bytes) -> Request:
    """c.ShouldBindJSON(&MessagesRequest) and the middleware's own checks: 400 with their texts."""
    obj, _, _ = first_value(body, "EOF")
    if obj is None:
        obj = {}
    if not isinstance(obj, dict):
        raise type_error(JSON_KIND[type(obj)], "", (), "anthropic.MessagesRequest")
    messages = obj.get("messages")
    if isinstance(messages, list):  # MessageParam's unmarshaler aborts decoding: its errors come first
        obj["messages"] = [_message(m) for m in messages]
    elif messages is not None:
        raise type_error(JSON_KIND[type(messages)], "MessagesRequest", ("messages",), "[]anthropic.MessageParam")
    check_fields(obj, REQUEST[2], "MessagesRequest")
    if not obj.get("model"):
        raise HTTPFail(400, "model is required")
    if (obj.get("max_tokens") or 0) <= 0:
        raise HTTPFail(400, "max_tokens is required and must be positive")
    if not obj.get("messages"):
        raise HTTPFail(400, "messages is required")
    return Request(obj)


def _message(raw: Any) -> dict[str, Any]:
    """MessageParam.UnmarshalJSON: the role, and the content as blocks (a string is one text block).

    Its type errors get the request's context as encoding/json adds it:
    `Go struct field MessagesRequest.messages.<field>`."""
    if raw is not None and not isinstance(raw, dict):
        raise type_error(JSON_KIND[type(raw)], "MessagesRequest", ("messages",), MESSAGE_HEAD)
    if raw is not None and raw.get("role") is not None and not isinstance(raw["role"], str):
        raise type_error(JSON_KIND[type(raw["role"])], "MessagesRequest", ("messages", "role"), "string")
    if raw is None or "content" not in raw:  # no content to unmarshal (a null message has none either)
        raise HTTPFail(400, EOF_TEXT)
    content = raw["content"]
    if content is None or isinstance(content, str):
        blocks = [{"type": "text", "text": content or ""}]
    elif isinstance(content, list):
        for block in content:
            if block is not None and not isinstance(block, dict):
                raise type_error(JSON_KIND[type(block)], "MessagesRequest", ("messages",), "anthropic.ContentBlock")
            if block:
                try:
                    check_fields(block, BLOCK[2], "MessagesRequest", ("messages",))
                except HTTPFail as e:  # the outer decode names its own struct for nested fields too
                    raise HTTPFail(400, re.sub(r"Go struct field \w*\.", "Go struct field MessagesRequest.",
                                               e.message, count=1))
        blocks = [b or {} for b in content]
    else:
        raise type_error(JSON_KIND[type(content)], "MessagesRequest", ("messages",), "[]anthropic.ContentBlock")
    return {"role": raw.get("role") or "", "content": blocks}


# === FromMessagesRequest =======================================================

def to_chat_request(r: Request) -> tuple[dict[str, Any], dict[str, Any]]:
    """anthropic.FromMessagesRequest: (the chat request for Front.chat, its raw format: none)."""
    b = r.body
    msgs: list[dict[str, Any]] = []
    system = b.get("system")
    if isinstance(system, str) and system:
        msgs.append({"role": "system", "content": system})
    elif isinstance(system, list):
        text = "".join(blk["text"] for blk in system
                       if isinstance(blk, dict) and blk.get("type") == "text" and isinstance(blk.get("text"), str))
        if text:
            msgs.append({"role": "system", "content": text})
    for m in b["messages"]:
        msgs += _convert_message(m)

    opts: dict[str, Any] = {"num_predict": b["max_tokens"]}
    for key in ("temperature", "top_p", "top_k"):
        if b.get(key) is not None:
            opts[key] = b[key]
    if b.get("stop_sequences"):
        opts["stop"] = b["stop_sequences"]

    tools = []
    declared = [t or {} for t in b.get("tools") or []]
    builtin_search = any((t.get("type") or "").startswith("web_search") for t in declared)
    for t in declared:
        if builtin_search and not (t.get("type") or "").startswith("web_search") and t.get("name") == "web_search":
            continue
        tools.append(_convert_tool(t))

    think = None
    thinking = b.get("thinking") or {}
    effort = ((b.get("output_config") or {}).get("effort") or "").strip().lower()
    effort = "high" if effort == "xhigh" else effort
    if thinking.get("type") == "enabled":
        think = True
    elif thinking.get("type") == "disabled":
        think = False
    elif b.get("output_config") is not None and effort in ("high", "medium", "low", "max"):
        think = effort
    # The middleware sets relax_thinking: a model that cannot think answers without thinking.
    req = {"model": b["model"], "messages": msgs, "options": opts, "stream": r.stream, "tools": tools or None,
           "think": think, "_keep_alive_zero": False, "_relax_thinking": True}
    return req, {"format": None}


def _convert_message(m: dict[str, Any]) -> list[dict[str, Any]]:
    """convertMessage: one Anthropic message as Ollama messages (tool results become tool messages)."""
    role = m["role"].lower()
    text, images, calls, thinking, results = [], 0, [], "", []
    for block in m["content"]:
        kind = block.get("type")
        if kind == "text":
            text.append(block.get("text") or "")
        elif kind == "image":
            if block.get("source") is None:
                raise HTTPFail(400, "invalid image source")
            _image(block["source"])
            images += 1
        elif kind == "tool_use":
            if not block.get("id"):
                raise HTTPFail(400, "tool_use block missing required 'id' field")
            if not block.get("name"):
                raise HTTPFail(400, "tool_use block missing required 'name' field")
            calls.append(_call(block))
        elif kind == "tool_result":
            results.append({"role": "tool", "content": _tool_result_text(block.get("content")),
                            "tool_call_id": block.get("tool_use_id") or ""})
        elif kind == "thinking":
            if block.get("thinking") is not None:
                thinking = block["thinking"]
        elif kind == "server_tool_use":
            calls.append(_call(block))
        elif kind == "web_search_tool_result":
            results.append({"role": "tool", "content": _web_search_text(block.get("content")),
                            "tool_call_id": block.get("tool_use_id") or ""})
    out = results if role == "user" and results else []
    joined = "".join(text)
    if joined or images or calls or thinking:
        msg: dict[str, Any] = {"role": role, "content": joined}
        if calls:
            msg["tool_calls"] = calls
        if thinking:
            msg["thinking"] = thinking
        out.append(msg)
    if role != "user" or not results:
        out += results
    return out


def _call(block: dict[str, Any]) -> dict[str, Any]:
    args = block.get("input")
    return {"id": block.get("id") or "", "function": {"name": block.get("name") or "",
                                                      "arguments": args if isinstance(args, dict) else {}}}


def _image(source: Any) -> bytes:
    """resolveImageSource: base64 sources only (the image is then dropped: the model has no vision)."""
    kind = (source.get("type") or "") if isinstance(source, dict) else ""
    if kind != "base64":
        raise HTTPFail(400, "invalid image source type: %s. Only base64 images are supported." % kind)
    data = (source.get("data") or "").replace("\r", "").replace("\n", "")  # Go skips line breaks
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise HTTPFail(400, "invalid base64 image data: illegal base64 data at input byte %d" % _bad_base64_at(data))


def _bad_base64_at(data: str) -> int:
    """About where Go's base64.StdEncoding reports corrupt input: the first byte outside the
    alphabet (padding aside), else the start of the incomplete last quantum."""
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for i, ch in enumerate(data):
        if ch not in alphabet and not (ch == "=" and i % 4 >= 2):
            return i
    return len(data) - len(data) % 4


def _tool_result_text(content: Any) -> str:
    """convertToolResultContent: a string, or the text parts of a list (its images checked)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    text = []
    for item in content:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "text" and isinstance(item.get("text"), str):
            text.append(item["text"])
        elif item.get("type") == "image":
            if not isinstance(item.get("source"), dict):
                raise HTTPFail(400, "invalid tool_result image source")
            _image({k: v for k, v in item["source"].items() if isinstance(v, str)})
    return "".join(text)


def _web_search_text(content: Any) -> str:
    """formatWebSearchToolResultContent for the shapes a decoded request can have."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        lines = []
        for item in content:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "web_search_result":
                lines.append("- %s: %s\n" % (item.get("title") if isinstance(item.get("title"), str) else "",
                                              item.get("url") if isinstance(item.get("url"), str) else ""))
            elif item.get("type") == "web_search_tool_result_error":
                code = item.get("error_code") if isinstance(item.get("error_code"), str) else ""
                return "web_search_tool_result_error" + (": " + code if code else "")
        return "".join(lines)
    if isinstance(content, dict) and content.get("type") == "web_search_tool_result_error":
        code = content.get("error_code") if isinstance(content.get("error_code"), str) else ""
        return "web_search_tool_result_error" + (": " + code if code else "")
    return go_json(content)


def _convert_tool(t: dict[str, Any]) -> dict[str, Any]:
    """convertTool: a custom tool, or Anthropic's web_search as a function named web_search."""
    if (t.get("type") or "").startswith("web_search"):
        return {"type": "function", "function": {"name": "web_search"}}
    schema = t.get("input_schema")
    name = t.get("name") or ""
    if schema is not None:
        try:
            if not isinstance(schema, dict):
                raise type_error(JSON_KIND[type(schema)], "", (), "api.ToolFunctionParameters")
            check_fields(schema, TOOL_PARAMETERS, "ToolFunctionParameters")
        except HTTPFail as e:
            raise HTTPFail(400, "invalid input_schema for tool %s: %s" % (go_quote(name), e.message))
    return {"type": "function", "function": {"name": name, "description": t.get("description") or "",
                                             "parameters": schema or {}}}


# === answers ===================================================================

def estimate_input_tokens(b: dict[str, Any]) -> int:
    """anthropic.EstimateInputTokens: a quarter of the request's text bytes, at least 1."""
    total = _count_any(b.get("system"))
    for m in b.get("messages") or []:
        total += len(m["role"].encode()) + sum(_count_block(blk) for blk in m["content"])
    for t in b.get("tools") or []:
        t = t or {}
        total += sum(len((t.get(k) or "").encode()) for k in ("name", "description"))
        total += len(go_json(t["input_schema"]).encode()) if t.get("input_schema") is not None else 0
    tokens = total // 4
    return 1 if tokens == 0 and (b.get("messages") or b.get("system") is not None) else tokens


def _count_any(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content.encode())
    if isinstance(content, list):
        return sum(_count_block(item) for item in content if isinstance(item, dict))
    return len(go_json(content).encode())


def _count_block(block: dict[str, Any]) -> int:
    n = sum(len(block[k].encode()) for k in ("text", "thinking") if isinstance(block.get(k), str))
    if block.get("type") in ("tool_use", "tool_result"):
        n += len(go_json({k: v for k, v in block.items() if v not in (None, "", False)}).encode())
    return n


def stop_reason(done_reason: str, has_calls: bool = False) -> str:
    """mapStopReason."""
    if has_calls:
        return "tool_use"
    return {"stop": "end_turn", "length": "max_tokens", "": ""}.get(done_reason, "stop_sequence")


class Converter:
    """One /v1/messages answer: its id, the model name, and the stream's state."""

    def __init__(self, r: Request) -> None:
        self.id = anthropic_id("msg")
        self.model = r.model
        self.estimate = estimate_input_tokens(r.body)
        self.first = True
        self.text_started = False
        self.index = 0
        self.calls_sent: set[str] = set()

    def message(self, res: dict[str, Any]) -> dict[str, Any]:
        """anthropic.ToMessagesResponse of the merged chat answer."""
        content = res["message"]["content"]
        calls = res["message"].get("tool_calls") or []
        blocks = [{"type": "text", "text": content}] if content else []
        blocks += [{"type": "tool_use", "id": c.get("id") or "", "name": c["function"]["name"],
                    "input": c["function"]["arguments"]} for c in calls]
        out: dict[str, Any] = {"id": self.id, "type": "message", "role": "assistant", "model": res["model"],
                               "content": blocks or None}
        reason = stop_reason(res.get("done_reason") or "", bool(calls))
        if reason:
            out["stop_reason"] = reason
        out["usage"] = {"input_tokens": res.get("prompt_eval_count", 0), "output_tokens": res.get("eval_count", 0)}
        return out

    def process(self, res: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        """StreamConverter.Process: the events one chat chunk makes."""
        events = []
        if self.first:
            self.first = False
            tokens = res.get("prompt_eval_count", 0) or self.estimate
            events.append(("message_start", {"type": "message_start", "message": {
                "id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": [],
                "usage": {"input_tokens": tokens, "output_tokens": 0}}}))
        content = res["message"]["content"]
        if content:
            if not self.text_started:
                self.text_started = True
                events.append(("content_block_start", {"type": "content_block_start", "index": self.index,
                                                       "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": self.index,
                                                   "delta": {"type": "text_delta", "text": content}}))
        for c in res["message"].get("tool_calls") or []:
            if c.get("id") in self.calls_sent:
                continue
            if self.text_started:
                events.append(("content_block_stop", {"type": "content_block_stop", "index": self.index}))
                self.index += 1
                self.text_started = False
            events.append(("content_block_start", {"type": "content_block_start", "index": self.index,
                                                   "content_block": {"type": "tool_use", "id": c.get("id") or "",
                                                                     "name": c["function"]["name"], "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": self.index,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": go_json(c["function"]["arguments"])}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": self.index}))
            self.calls_sent.add(c.get("id"))
            self.index += 1
        if res["done"]:
            if self.text_started:
                events.append(("content_block_stop", {"type": "content_block_stop", "index": self.index}))
            reason = stop_reason(res.get("done_reason") or "", bool(self.calls_sent))
            events.append(("message_delta", {"type": "message_delta",
                                             "delta": {"stop_reason": reason} if reason else {},
                                             "usage": {"input_tokens": res.get("prompt_eval_count", 0),
                                                       "output_tokens": res.get("eval_count", 0)}}))
            events.append(("message_stop", {"type": "message_stop"}))
        return events
