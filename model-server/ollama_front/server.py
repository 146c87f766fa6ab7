"""The HTTP layer: Ollama's routes, gin's routing quirks, and the command line.

Handler plays Ollama's gin engine on a loopback listener: the Host check
(allowedHostsMiddleware), 301/307 for a trailing slash, 404 and 405 texts,
and the response framing each route uses (gin's c.JSON, json.Encoder with
its newline, NDJSON and SSE streams, chunked). `main` is the command line.
"""

from __future__ import annotations

import argparse
import ipaddress
import select
import socket
import sys
import time
import traceback
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import VERSION, messages, responses
from .decode import decode_request
from .errors import HTTPFail, anthropic_error, oai_error
from .gojson import go_json, go_quote, unix_of
from .handlers import Front, merge_chunks
from .llama import Upstream
from .model import Model, parse_name
from .openai_chat import chunk, from_chat_request, to_chat_completion, to_tool_calls, usage

JSON_CT = "application/json; charset=utf-8"


def host_allowed(host_header: str | None) -> bool | str:
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
    """One connection; routes and answers each request as Ollama's gin engine does."""

    protocol_version = "HTTP/1.1"
    front: Front
    verbose = False
    max_body = 64 << 20  # bytes; Ollama sets no bound, a hostile client must meet one
    body_timeout = 300.0  # seconds to receive a request body
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
        "/v1/responses": {"POST": "v1_responses"},
        "/v1/messages": {"POST": "v1_messages"},
    }
    UNSUPPORTED = {"/api/pull": "POST", "/api/push": "POST", "/api/create": "POST", "/api/copy": "POST",
                   "/api/delete": "DELETE", "/api/embed": "POST", "/api/embeddings": "POST",
                   "/v1/completions": "POST", "/v1/embeddings": "POST"}

    linger = 5.0  # seconds to drain a body left unsent when the connection closes early

    def finish(self) -> None:
        """Flush the answer; when closing with a request body unread, drain it first.

        Closing a socket whose input is unread resets the connection, and a
        client still sending its body would see a broken pipe instead of the
        413 or 400 already written. Like Go's server, shut the write side and
        read (bounded by `linger`) until the client closes."""
        super().finish()
        headers = getattr(self, "headers", None)
        declared = headers is not None and (
            headers.get("Content-Length", "0").strip() not in ("", "0") or "Transfer-Encoding" in headers)
        if not (self.close_connection and declared):
            return
        try:
            self.connection.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + self.linger
            while (left := deadline - time.monotonic()) > 0:
                self.connection.settimeout(left)
                if not self.connection.recv(1 << 16):
                    break
        except OSError:
            pass

    def log_message(self, fmt: str, *args: Any) -> None:
        if self.verbose:
            sys.stderr.write("[ollama-front] %s %s\n" % (self.address_string(), fmt % args))

    def send_response(self, code: int, message: str | None = None) -> None:
        self._responded = True
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    # --- responses ---
    def send_bytes(self, status: int, ctype: str | None, data: bytes, headers: Any = ()) -> None:
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_gin_json(self, status: int, obj: Any, floats: bool = False) -> None:
        """gin's c.JSON: charset in the type, no trailing newline."""
        self.send_bytes(status, JSON_CT, go_json(obj, floats).encode())

    def send_encoder_json(self, status: int, obj: Any, floats: bool = False) -> None:
        """json.NewEncoder(w).Encode, as the compatibility writers answer: a trailing newline."""
        self.send_bytes(status, "application/json", (go_json(obj, floats) + "\n").encode())

    def start_stream(self, ctype: str, headers: Any = ()) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def write_chunk(self, data: str | bytes) -> None:
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def alive(self) -> bool:
        """False once the client has closed its side of the connection."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return not readable or self.connection.recv(1, socket.MSG_PEEK) != b""
        except OSError:
            return False

    def read_body(self) -> bytes:
        """The request body, bounded by max_body and read under body_timeout.

        A body over the bound is 413, a malformed length or chunked framing
        400; either way the connection is closed after the answer."""
        self._body_read = True
        self.connection.settimeout(self.body_timeout)
        try:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                return self._read_chunked()
            length = (self.headers.get("Content-Length") or "0").strip()
            if not length.isdigit():
                self.close_connection = True
                raise HTTPFail(400, "invalid Content-Length %s" % go_quote(length))
            n = int(length)
            if n > self.max_body:
                self.close_connection = True
                raise HTTPFail(413, "request body too large")
            data = self.rfile.read(n) if n > 0 else b""
            if len(data) < n:
                self.close_connection = True
                raise HTTPFail(400, "unexpected EOF")
            return data
        except TimeoutError:
            self.close_connection = True
            raise HTTPFail(408, "timed out reading the request body")
        finally:
            self.connection.settimeout(None)

    def _read_chunked(self) -> bytes:
        data = bytearray()
        while True:
            line = self.rfile.readline(1025)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise HTTPFail(400, "malformed chunked encoding")
            if size == 0:
                for _ in range(100):  # trailers, then the blank line
                    if self.rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        break
                return bytes(data)
            if size < 0 or len(data) + size > self.max_body:
                self.close_connection = True
                raise HTTPFail(413, "request body too large")
            piece = self.rfile.read(size)
            if len(piece) < size:
                self.close_connection = True
                raise HTTPFail(400, "unexpected EOF")
            data += piece
            self.rfile.readline(1025)

    # --- routing (gin) ---
    def dispatch(self) -> None:
        """Route one request; a body left unread closes the connection after the answer."""
        self._responded = self._body_read = False
        try:
            self._dispatch()
        finally:
            if not self._body_read and (self.headers.get("Content-Length", "0").strip() not in ("", "0")
                                        or "Transfer-Encoding" in self.headers):
                self.close_connection = True

    def _dispatch(self) -> None:
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
        except Exception:  # a bug here must not leave the client without an answer or show it a traceback
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            if not self._responded:
                self.send_gin_json(500, {"error": "internal error in the Ollama front (see its log)"})

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = dispatch

    # --- native API ---
    def h_root(self) -> None:
        self.send_bytes(200, "text/plain; charset=utf-8", b"Ollama is running")

    def h_version(self) -> None:
        self.send_gin_json(200, {"version": VERSION})

    def h_tags(self) -> None:
        self.send_gin_json(200, {"models": [m.list_entry() for m in self.front.models]})

    def h_ps(self) -> None:
        self.send_gin_json(200, self.front.ps())

    def h_show(self) -> None:
        req, _ = decode_request(self.read_body(), "ShowRequest")
        self.send_gin_json(200, self.front.show(req), floats=True)

    def h_unsupported(self) -> None:
        self.read_body()
        raise HTTPFail(501, "%s is not supported by this Ollama-compatible test front" % self.path)

    def h_chat(self) -> None:
        req, raw = decode_request(self.read_body(), "ChatRequest")
        self.respond_native(req, *self.front.chat(req, raw, self.alive), chat=True)

    def h_generate(self) -> None:
        req, raw = decode_request(self.read_body(), "GenerateRequest")
        self.respond_native(req, *self.front.generate(req, raw, self.alive), chat=False)

    def respond_native(self, req: dict[str, Any], immediate: dict[str, Any] | None,
                       gen: Iterator[dict[str, Any]] | None, chat: bool) -> None:
        if immediate is not None:
            return self.send_gin_json(200, immediate)
        if req.get("stream") is False:
            whole = merge_chunks(gen, chat)
            return self.send_gin_json(200, whole, floats="logprobs" in whole)
        started = False
        try:
            for res in gen:
                if not started:
                    self.start_stream("application/x-ndjson")
                    started = True
                self.write_chunk(go_json(res, floats="logprobs" in res) + "\n")
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
    def h_v1_models(self) -> None:
        self.send_encoder_json(200, {"object": "list", "data": [
            {"id": m.name, "object": "model", "created": m.modified_ns // 10**9, "owned_by": m.parsed[1]}
            for m in self.front.models]})

    def h_v1_model(self, name: str) -> None:
        try:
            self.front.show({"model": name})
        except HTTPFail as e:
            return self.send_encoder_json(e.status, oai_error(e.status, e.message))
        parsed = parse_name(name)
        m = self.front.find(parsed) or self.front.model
        self.send_encoder_json(200, {"id": name, "object": "model", "created": m.modified_ns // 10**9,
                                     "owned_by": parsed[1] if parsed else ""})

    def h_v1_chat(self) -> None:
        try:
            r, _ = decode_request(self.read_compat_body(), "ChatCompletionRequest", native=False)
            if not r.get("messages"):
                raise HTTPFail(400, "[] is too short - 'messages'")
            req, raw = from_chat_request(r)
        except HTTPFail as e:
            return self.send_gin_json(e.status, oai_error(e.status, e.message))
        cid = "chatcmpl-%d" % (time.time_ns() // 1000 % 999)
        try:
            _, gen = self.front.chat(req, raw, self.alive)
            if not req["stream"]:
                whole = to_chat_completion(cid, merge_chunks(gen, True))
                return self.send_encoder_json(200, whole, floats="logprobs" in whole["choices"][0])
        except HTTPFail as e:
            return self.send_encoder_json(e.status, oai_error(e.status, e.message))
        include_usage = bool((r.get("stream_options") or {}).get("include_usage"))
        started, created, call_sent = False, None, False
        try:
            for res in gen:
                if not started:
                    self.start_stream("text/event-stream")
                    started, created = True, unix_of(res["created_at"])
                    first = True
                calls = to_tool_calls(res["message"].get("tool_calls"))
                logprobs = res.get("logprobs")
                if not (res["done"] and not first and res["message"]["content"] == "" and not calls and not logprobs):
                    delta = {"role": "assistant"} if first else {}
                    delta["content"] = res["message"]["content"]
                    if calls:
                        delta["tool_calls"] = calls
                        call_sent = True
                    c = chunk(cid, created, res, delta, logprobs=logprobs)
                    self.write_chunk("data: %s\n\n" % go_json(c, floats=bool(logprobs)))
                    first = False
                if res["done"]:
                    reason = res.get("done_reason") or "stop"
                    fin = chunk(cid, created, res, {}, "tool_calls" if reason == "stop" and call_sent else reason)
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

    # --- the Responses and Messages surfaces ---
    def read_compat_body(self) -> bytes:
        """The body of a compatibility route; Ollama inflates zstd bodies there, this front cannot."""
        if self.headers.get("Content-Encoding", "").strip().lower() == "zstd":
            self.read_body()
            raise HTTPFail(400, "zstd request bodies are not supported by this Ollama front")
        return self.read_body()

    def chat_chunks(self, req: dict[str, Any], raw: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """ChatHandler's chunks for a translated request; a load answer is one done chunk."""
        immediate, gen = self.front.chat(req, raw, self.alive)
        return iter([immediate]) if immediate is not None else gen

    def stream_events(self, gen: Iterator[dict[str, Any]], process: Callable[[dict[str, Any]], list[Any]],
                      error_body: Callable[[int, str], Any], headers: list[tuple[str, str]]) -> None:
        """An SSE answer: `event: NAME` / `data: JSON` for each event a chunk makes.

        An error before the first chunk is the surface's JSON error; after it,
        Ollama's writer turns the `{"error"}` line into no event, so the stream
        just ends, as it does when generation stops without a done chunk."""
        started = False
        try:
            for res in gen:
                events = process(res)
                if not started:
                    self.start_stream("text/event-stream", headers)
                    started = True
                for name, data in events:
                    self.write_chunk("event: %s\ndata: %s\n\n" % (name, go_json(data, floats=True)))
        except HTTPFail as e:
            if not started:
                body = (go_json(error_body(e.status, e.message)) + "\n").encode()
                return self.send_bytes(e.status, "application/json", body, headers)
        except (BrokenPipeError, ConnectionResetError):
            gen.close()
            self.close_connection = True
            return
        if not started:
            self.start_stream("text/event-stream", headers)
        self.wfile.write(b"0\r\n\r\n")

    def h_v1_responses(self) -> None:
        """ResponsesMiddleware, then ChatHandler."""
        try:
            r = responses.bind(self.read_compat_body())
            req, raw = responses.to_chat_request(r)
        except HTTPFail as e:
            return self.send_gin_json(e.status, oai_error(e.status, e.message))
        conv = responses.Converter(r)
        headers = [("Cache-Control", "no-cache"), ("Connection", "keep-alive")] if r.stream else []
        try:
            gen = self.chat_chunks(req, raw)
            if not r.stream:
                body = (go_json(conv.response(merge_chunks(gen, True)), floats=True) + "\n").encode()
                return self.send_bytes(200, "application/json", body)
        except HTTPFail as e:
            body = (go_json(oai_error(e.status, e.message)) + "\n").encode()
            return self.send_bytes(e.status, "application/json", body, headers)
        self.stream_events(gen, conv.process, oai_error, headers)

    def h_v1_messages(self) -> None:
        """AnthropicMessagesMiddleware, then ChatHandler (thinking relaxed)."""
        try:
            r = messages.bind(self.read_compat_body())
            req, raw = messages.to_chat_request(r)
        except HTTPFail as e:
            return self.send_gin_json(e.status, anthropic_error(e.status, e.message))
        conv = messages.Converter(r)
        headers = [("Cache-Control", "no-cache"), ("Connection", "keep-alive")] if r.stream else []
        try:
            gen = self.chat_chunks(req, raw)
            if not r.stream:
                return self.send_encoder_json(200, conv.message(merge_chunks(gen, True)))
        except HTTPFail as e:
            body = (go_json(anthropic_error(e.status, e.message)) + "\n").encode()
            return self.send_bytes(e.status, "application/json", body, headers)
        self.stream_events(gen, conv.process, anthropic_error, headers)


def main(argv: list[str] | None = None) -> None:
    """Serve until interrupted."""
    ap = argparse.ArgumentParser(description="Ollama-compatible HTTP front for llama-server")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=11434)
    ap.add_argument("--llama-url", required=True, help="base URL of a running llama-server")
    ap.add_argument("--model", default="gemma3:270m", help="the one model name this front serves")
    ap.add_argument("--tools-model", default="",
                    help="a second name for the same GGUF, served as tool-capable (e.g. gemma3-tools:270m)")
    ap.add_argument("--gguf", help="GGUF path for /api/show metadata (default: asked from llama-server)")
    ap.add_argument("--max-body-bytes", type=int, default=Handler.max_body,
                    help="largest request body accepted (default %(default)s); larger ones are answered 413")
    ap.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = ap.parse_args(argv)
    up = Upstream(args.llama_url)
    gguf = args.gguf
    if not gguf:
        try:
            gguf = up.call("GET", "/props").get("model_path")
        except HTTPFail:
            gguf = None
    if args.tools_model and (parse_name(args.tools_model) is None
                             or parse_name(args.tools_model) == parse_name(args.model)):
        ap.error("--tools-model must be a valid model name other than --model")
    Handler.front = Front(Model(args.model, gguf), up, Model(args.tools_model, gguf, tools=True) if args.tools_model else None)
    Handler.verbose = args.verbose
    Handler.max_body = args.max_body_bytes
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    sys.stderr.write("[ollama-front] listening on http://%s:%d (model %s%s, llama-server %s)\n"
                     % (args.host, server.server_address[1], args.model,
                        " and %s with tools" % args.tools_model if args.tools_model else "", args.llama_url))
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

