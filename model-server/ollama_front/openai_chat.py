"""OpenAI's Chat Completions (`POST /v1/chat/completions`), as Ollama serves it.

middleware/openai.go's ChatMiddleware and openai/openai.go: the request is
turned into an Ollama chat request (FromChatRequest), run through ChatHandler,
and each chat chunk is turned back into a chat.completion or an SSE
chat.completion.chunk.
"""

from __future__ import annotations

import json
from typing import Any

from .decode import JSON_KIND, go_type_name
from .errors import HTTPFail
from .gojson import go_json, go_quote, unix_of

def from_chat_request(r: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
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
        extra: dict[str, Any] = {}
        if calls:
            extra["tool_calls"] = [{"id": tc.get("id") or "", "function": {
                "index": i, "name": (tc.get("function") or {}).get("name") or "",
                "arguments": json.loads((tc.get("function") or {}).get("arguments") or "{}")}}
                for i, tc in enumerate(calls)]
        if m.get("tool_call_id"):
            extra["tool_call_id"] = m["tool_call_id"]
        if isinstance(content, str):
            msgs.append({"role": role, "content": content, **extra})
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
            msgs.append({"role": role, "content": "", **extra})
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
           "tools": r.get("tools"), "think": think, "_keep_alive_zero": False,
           "logprobs": r.get("logprobs") is True, "top_logprobs": r.get("top_logprobs") or 0}
    return req, {"format": fmt}


def to_tool_calls(calls: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """openai.ToToolCalls: arguments as a JSON string."""
    return [{"id": c.get("id") or "", "index": c["function"].get("index", 0), "type": "function",
             "function": {"name": c["function"]["name"], "arguments": go_json(c["function"]["arguments"])}}
            for c in calls or []]


def to_chat_completion(cid: str, res: dict[str, Any]) -> dict[str, Any]:
    """openai.ToChatCompletion of a merged (non-streaming) chat answer."""
    calls = to_tool_calls(res["message"].get("tool_calls"))
    reason = res.get("done_reason") or None
    if reason == "stop" and calls:
        reason = "tool_calls"
    message = {"role": res["message"]["role"], "content": res["message"]["content"]}
    if calls:
        message["tool_calls"] = calls
    choice = {"index": 0, "message": message, "finish_reason": reason}
    if res.get("logprobs"):
        choice["logprobs"] = {"content": res["logprobs"]}
    return {"id": cid, "object": "chat.completion", "created": unix_of(res["created_at"]),
            "model": res["model"], "system_fingerprint": "fp_ollama", "choices": [choice],
            "usage": usage(res)}


def usage(res: dict[str, Any]) -> dict[str, int]:
    p, c = res.get("prompt_eval_count", 0), res.get("eval_count", 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


def chunk(cid: str, created: int, res: dict[str, Any], delta: dict[str, Any],
          finish: str | None = None, logprobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One chat.completion.chunk (with `choices[0].logprobs.content` when there are logprobs)."""
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
    if logprobs:
        choice["logprobs"] = {"content": logprobs}
    return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": res["model"],
            "system_fingerprint": "fp_ollama", "choices": [choice]}

