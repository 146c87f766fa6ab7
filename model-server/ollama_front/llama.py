"""The engine: Ollama's options and its llama-server runner client.

Options are merged as Ollama does (api.DefaultOptions, then the model's
parameters, then the request's, with Options.FromMap's type errors), and a
generation is one streamed `POST /completion` to llama-server, read the way
Ollama's llm/llama_server.go reads it.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from .errors import RUNNER_STOPPED, HTTPFail
from .gojson import f32, go_float32, go_quote
from .model import MODEL_PARAMS

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


def merge_options(req_opts: dict[str, Any] | None, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """api.DefaultOptions, then the model's parameters, then the request (Options.FromMap)."""
    opts = dict(DEFAULT_OPTIONS)
    for layer in (MODEL_PARAMS if params is None else params, req_opts or {}):
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


def f32_json(x: float) -> float:
    """float32 values go to llama-server in Go's shortest float32 form."""
    return float(go_float32(x))


class Upstream:
    """llama-server over HTTP; one connection per request so closing it stops generation."""

    def __init__(self, url: str) -> None:
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or 80
        self.num_ctx: int | None = None

    def conn(self, timeout: float | None = None) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def call(self, method: str, path: str, payload: Any = None, timeout: float = 30) -> Any:
        """One JSON call; any failure is Ollama's 500 for a runner that is gone or refused."""
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

    def context_length(self) -> int:
        """llama-server's n_ctx, asked once (4096 until it answers)."""
        if self.num_ctx is None:
            try:
                props = self.call("GET", "/props")
                self.num_ctx = int(props.get("default_generation_settings", {}).get("n_ctx") or 4096)
            except (HTTPFail, ValueError, TypeError):
                return 4096
        return self.num_ctx

    def tokenize(self, text: str) -> list[int]:
        return self.call("POST", "/tokenize", {"content": text}).get("tokens", [])

    def detokenize(self, tokens: list[int]) -> str:
        return self.call("POST", "/detokenize", {"tokens": tokens}).get("content", "")

    def completion(self, prompt: str, opts: dict[str, Any], fmt_raw: str | None,
                   alive: Callable[[], bool], n_probs: int = 0) -> Iterator[tuple[str, Any, list[Any]]]:
        """llmServer.Completion: yields ("chunk", text, probabilities) then ("done", metrics, []);
        raises HTTPFail. With `n_probs`, llama-server's `completion_probabilities` of each
        event (its tokens, each with its `n_probs` most likely alternatives)."""
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
        if n_probs:
            req["n_probs"] = n_probs
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
                    yield "chunk", content, ev.get("completion_probabilities") or []
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
                yield "done", final, []
        finally:
            c.close()


def metrics(final: dict[str, Any], start_ns: int, loaded_ns: int) -> dict[str, int]:
    """The done chunk's durations and counts (zero values omitted, as omitempty does)."""
    m = {"total_duration": time.monotonic_ns() - start_ns, "load_duration": loaded_ns - start_ns}
    m.update((k, final[k]) for k in ("prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"))
    return {k: v for k, v in m.items() if v}

