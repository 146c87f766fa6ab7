"""A scripted stand-in for llama.cpp's llama-server, for testing the front without a model.

It serves the few endpoints the front uses, in llama-server's shapes:
`GET /health`, `GET /props`, `POST /tokenize` and `/detokenize` (one token per
character), and `POST /completion`, which streams `data: {...}` events and
ends with a `stop` event carrying `stop_type` and `timings`. Asked for
`n_probs`, each piece is one token whose event carries llama-server's
`completion_probabilities`: the token's own log-probability (`logprob`, or
`prob` with `post_sampling_probs`) and `n_probs` candidates, the token first,
then `alt1`, `alt2`, ... each one nat less likely.

Each `/completion` answer comes from the next scripted `Reply` (or the default
one); every request body is recorded, so tests can check what the front sent.
"""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A piece's log-probability unless its Reply says otherwise (about 0.9).
LOGPROB = -0.10536051565782628


@dataclass
class Reply:
    """One scripted answer to `POST /completion`.

    pieces: the streamed text pieces; stop_type: "eos", "limit" or "word";
    status/body: answer with this status and raw body instead of a stream;
    cut: close the connection after this many pieces, without a stop event;
    delay: seconds to wait before each piece;
    logprobs: each piece's log-probability when asked for `n_probs` (default LOGPROB).
    """

    pieces: list[str] = field(default_factory=lambda: ["Hello", " world", "."])
    stop_type: str = "eos"
    status: int = 200
    body: str = ""
    cut: int | None = None
    delay: float = 0.0
    logprobs: list[float] | None = None


class FakeLlama:
    """A running fake llama-server on a free loopback port."""

    def __init__(self, n_ctx: int = 4096) -> None:
        self.n_ctx = n_ctx
        self.requests: list[dict[str, Any]] = []
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"fake": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next `/completion` requests (replacing any left)."""
        with self._lock:
            self._script = list(replies)

    def next_reply(self) -> Reply:
        with self._lock:
            return self._script.pop(0) if self._script else Reply()

    def completions(self) -> list[dict[str, Any]]:
        """The bodies of the `/completion` requests received so far."""
        return [r["body"] for r in self.requests if r["path"] == "/completion"]

    def reset(self) -> None:
        with self._lock:
            self._script = []
            self.requests.clear()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeLlama

    def log_message(self, fmt: str, *args: Any) -> None:
        pass

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            return self._json(200, {"status": "ok"})
        if self.path == "/props":
            return self._json(200, {"default_generation_settings": {"n_ctx": self.fake.n_ctx}, "model_path": ""})
        self._json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        self.fake.requests.append({"path": self.path, "body": body})
        if self.path == "/tokenize":
            return self._json(200, {"tokens": [ord(c) for c in body.get("content", "")]})
        if self.path == "/detokenize":
            return self._json(200, {"content": "".join(chr(t) for t in body.get("tokens", []))})
        if self.path == "/completion":
            return self._completion(body)
        self._json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

    def _completion(self, body: dict[str, Any]) -> None:
        reply = self.fake.next_reply()
        if reply.status != 200:
            data = reply.body.encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        t0 = time.monotonic()
        for i, piece in enumerate(reply.pieces):
            if reply.cut is not None and i >= reply.cut:
                return
            if reply.delay:
                time.sleep(reply.delay)
            event: dict[str, Any] = {"content": piece, "stop": False}
            if body.get("n_probs"):
                lp = reply.logprobs[i] if reply.logprobs is not None else LOGPROB
                event["completion_probabilities"] = [_probs(1000 + i, piece, lp, body)]
            self._event(event)
        if reply.cut is not None and reply.cut <= len(reply.pieces):
            return
        prompt_n = len(body.get("prompt", ""))
        elapsed = (time.monotonic() - t0) * 1000
        self._event({"content": "", "stop": True, "stop_type": reply.stop_type,
                     "timings": {"cache_n": 0, "prompt_n": prompt_n, "prompt_ms": 1.5,
                                 "predicted_n": len(reply.pieces), "predicted_ms": elapsed + 2.0}})

    def _event(self, obj: dict[str, Any]) -> None:
        try:
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()
        except OSError:
            pass


def _candidate(tok: int, text: str, logprob: float, post: bool) -> dict[str, Any]:
    """One candidate as llama-server writes it: id, token, bytes, then logprob (or prob)."""
    out: dict[str, Any] = {"id": tok, "token": text, "bytes": list(text.encode())}
    if post:
        out["prob"] = math.exp(logprob)
    else:
        out["logprob"] = logprob
    return out


def _probs(tok: int, text: str, logprob: float, body: dict[str, Any]) -> dict[str, Any]:
    """One token's `completion_probabilities` entry, with `n_probs` candidates."""
    post = bool(body.get("post_sampling_probs"))
    entry = _candidate(tok, text, logprob, post)
    top = [_candidate(tok, text, logprob, post)]
    top += [_candidate(k, "alt%d" % k, logprob - k, post) for k in range(1, int(body["n_probs"]))]
    entry["top_probs" if post else "top_logprobs"] = top
    return entry
