"""Ollama's native handlers (server/routes.go): chat, generate, show, ps.

Front.chat is ChatHandler and Front.generate is GenerateHandler: they resolve
the model, refuse what gemma3 cannot do (tools, thinking, insert) with
Ollama's errors, render the prompt, and return a generator of Ollama chat or
generate chunks. Every compatibility surface (/v1/chat/completions,
/v1/responses, /v1/messages) translates its request into a chat request and
goes through Front.chat, as Ollama's middlewares go through ChatHandler.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from .errors import HTTPFail
from .gojson import go_quote, go_time
from .llama import Upstream, merge_options, metrics
from .logprobs import convert, n_probs, with_logprobs
from .model import Model, display_shortest, parse_name
from .prompt import render
from . import tools as native_tools

Chunks = Iterator[dict[str, Any]]

class Front:
    """Ollama's server for one GGUF on one llama-server, under one or two model names:
    `model` (gemma3's template, completion only) and, optionally, `tools_model`
    (a template that declares tools; completion and tools)."""

    def __init__(self, model: Model, upstream: Upstream, tools_model: Model | None = None) -> None:
        self.model, self.up = model, upstream
        self.models = [model] + ([tools_model] if tools_model is not None else [])
        self.last_used: int | None = None
        self.last_model = model

    def find(self, name: tuple[str, str, str, str] | None) -> Model | None:
        return next((m for m in self.models if m.matches(name)), None)

    def _resolve(self, name_str: str | None, empty_status: int, empty_msg: str) -> Model:
        if not name_str:
            raise HTTPFail(empty_status, empty_msg)
        name = parse_name(name_str)
        if name is None:
            raise HTTPFail(400, "invalid model name")
        m = self.find(name)
        if m is None:
            raise HTTPFail(404, "model '%s' not found" % name_str)
        return m

    def _common(self, req: dict[str, Any], caps: list[str], model: Model | None = None) -> dict[str, Any]:
        """The thinking check, then the capability check (gemma3 has only completion), then options.

        With `_relax_thinking` (Ollama's relax_thinking, set by its Anthropic
        middleware) thinking is dropped instead of refused."""
        if req.get("think") and (req["think"] is True or req["think"] in ("high", "medium", "low", "max")):
            if not req.get("_relax_thinking"):
                raise HTTPFail(400, "%s does not support thinking" % go_quote(req["model"]))
            req["think"] = None
        model = model or self.model
        caps = [c for c in caps if c not in model.capabilities()]
        if caps:
            raise HTTPFail(400, "%s does not support %s" % (model.full_name, "\n".join(caps)))
        return merge_options(req.get("options"), model.params)

    def chat_prompt(self, msgs: list[dict[str, Any]], truncate: bool,
                    tools: list[dict[str, Any]] | None = None, tools_model: bool = False) -> str:
        """server/prompt.go chatPrompt: drop the oldest messages until the prompt fits num_ctx."""
        def rnd(ms: list[dict[str, Any]]) -> str:
            return native_tools.render(ms, tools) if tools_model else render(ms)
        num_ctx, cur, system = self.up.context_length(), 0, []
        if truncate:
            for i in range(len(msgs)):
                system = [m for m in msgs[:i] if m["role"] == "system"]
                if len(self.up.tokenize(rnd(system + msgs[i:]))) <= num_ctx or i == len(msgs) - 1:
                    cur = i
                    break
        return rnd(system + msgs[cur:])

    def chat(self, req: dict[str, Any], raw: dict[str, Any], alive: Callable[[], bool]
             ) -> tuple[dict[str, Any] | None, Chunks | None]:
        """ChatHandler: returns (immediate response or None, generator of chunks)."""
        start = time.monotonic_ns()
        if not 0 <= (req.get("top_logprobs") or 0) <= 20:
            raise HTTPFail(400, "top_logprobs must be between 0 and 20")
        model = self._resolve(req.get("model"), 400, "model is required")
        msgs = [m for m in (req.get("messages") or [])]
        name = req["model"]
        if not msgs and req["_keep_alive_zero"]:
            return self._short(name, "unload", chat=True), None
        tools = req.get("tools") or None
        opts = self._common(req, ["tools"] if tools else [], model)
        self.last_used, self.last_model = time.time_ns(), model
        loaded = time.monotonic_ns()
        if not msgs:
            return self._short(name, "load", chat=True), None
        if model.tools:
            prompt = self.chat_prompt([dict(m) for m in msgs], req.get("truncate", True) is not False, tools, True)
        else:
            prompt = self.chat_prompt([{"role": m["role"], "content": m.get("content") or ""} for m in msgs],
                                      req.get("truncate", True) is not False)
        parser = native_tools.Parser(tools) if tools else None
        probs, top = n_probs(req), (req.get("top_logprobs") or 0) > 0

        def gen() -> Chunks:
            for kind, val, lps in self.up.completion(prompt, opts, raw.get("format"), alive, probs):
                res = {"model": name, "created_at": go_time(), "message": {"role": "assistant"}, "done": kind == "done"}
                res["message"]["content"] = val if kind == "chunk" else val["content"]
                if kind == "done":
                    res["done_reason"] = val["done_reason"]
                    res.update(metrics(val, start, loaded))
                elif lps:
                    res["logprobs"] = convert(lps, top)
                if parser is not None:
                    # ChatHandler with req.Tools: the parser decides what each piece becomes.
                    calls, content = parser.add(res["message"]["content"])
                    if content:
                        res["message"]["content"] = content
                    elif calls:
                        for c in calls:
                            c["id"] = native_tools.call_id()
                        res["message"]["content"] = ""
                        res["message"]["tool_calls"] = [{"id": c["id"], "function": c["function"]} for c in calls]
                    elif res["done"]:
                        res["message"]["content"] = parser.content()
                    else:
                        # The parser holds the text back; its tokens' logprobs go out at once.
                        if res.get("logprobs"):
                            res["message"]["content"] = ""
                            yield res
                        continue
                yield res
        return None, gen()

    def generate(self, req: dict[str, Any], raw: dict[str, Any], alive: Callable[[], bool]
                 ) -> tuple[dict[str, Any] | None, Chunks | None]:
        """GenerateHandler."""
        start = time.monotonic_ns()
        if not 0 <= (req.get("top_logprobs") or 0) <= 20:
            raise HTTPFail(400, "top_logprobs must be between 0 and 20")
        name = req.get("model") or ""
        model = self._resolve(name, 404, "model '' not found")
        prompt = req.get("prompt") or ""
        if not prompt and req["_keep_alive_zero"]:
            return self._short(name, "unload", chat=False), None
        if req.get("raw") and (req.get("template") or req.get("system") or req.get("context")):
            raise HTTPFail(400, "raw mode does not support template, system, or context")
        opts = self._common(req, ["insert"] if req.get("suffix") else [], model)
        self.last_used, self.last_model = time.time_ns(), model
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

        probs, top = n_probs(req), (req.get("top_logprobs") or 0) > 0

        def gen() -> Chunks:
            text = []
            for kind, val, lps in self.up.completion(prompt, opts, raw.get("format"), alive, probs):
                res = {"model": name, "created_at": go_time(), "response": val if kind == "chunk" else val["content"],
                       "done": kind == "done"}
                text.append(res["response"])
                if kind == "done":
                    res["done_reason"] = val["done_reason"]
                    if not req.get("raw"):
                        res["context"] = self.up.tokenize(prompt + "".join(text))
                    res.update(metrics(val, start, loaded))
                elif lps:
                    res["logprobs"] = convert(lps, top)
                yield res
        return None, gen()

    @staticmethod
    def _short(name: str, reason: str, chat: bool) -> dict[str, Any]:
        """The answer to a load or unload request (no messages or prompt)."""
        res = {"model": name, "created_at": go_time()}
        res.update({"message": {"role": "assistant", "content": ""}} if chat else {"response": ""})
        res.update(done=True, done_reason=reason)
        return res

    def show(self, req: dict[str, Any]) -> dict[str, Any]:
        name_str = req.get("model") or req.get("name")
        if not name_str:
            raise HTTPFail(400, "model is required")
        name = parse_name(name_str)
        if name is None:
            raise HTTPFail(400, "invalid model name")
        model = self.find(name)
        if model is None:
            raise HTTPFail(404, "model '%s' not found" % display_shortest(name))
        return model.show(bool(req.get("verbose")))

    def ps(self) -> dict[str, Any]:
        if self.last_used is None:
            return {"models": []}
        e = self.last_model.list_entry(with_caps=False)
        del e["modified_at"]
        e.update(expires_at=go_time(self.last_used + 300 * 10**9, utc=False), size_vram=0,
                 context_length=self.up.context_length())
        return {"models": [e]}


def merge_chunks(chunks: Chunks, chat: bool) -> dict[str, Any]:
    """The non-streaming path: concatenate text and logprobs, keep everything else from the last chunk."""
    last, text, calls, logprobs = None, [], [], []
    for res in chunks:
        text.append(res["message"]["content"] if chat else res["response"])
        if chat:
            calls += res["message"].get("tool_calls") or []
        logprobs += res.get("logprobs") or []
        last = res
    if last is None:  # stream ended without any chunk: Go's zero value
        last = {"model": "", "created_at": "0001-01-01T00:00:00Z"}
        last.update({"message": {"role": "", "content": ""}} if chat else {"response": ""})
        last["done"] = False
    if chat:
        last["message"]["content"] = "".join(text)
        last["message"].pop("tool_calls", None)
        if calls:
            last["message"]["tool_calls"] = calls
    else:
        last["response"] = "".join(text)
    return with_logprobs(last, logprobs, chat)

