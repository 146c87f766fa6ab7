"""A recording reverse proxy: the CLI talks to it, it forwards every request to
augur and keeps each exchange (request and response bodies) for the test to read.

Responses are read whole before they are passed on, so an SSE stream reaches
the CLI at once instead of event by event; its bytes are unchanged. Response
header names are kept lowercased.
"""

import http.client
import http.server
import threading
import urllib.parse

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "host", "content-length"}


class Exchange:
    def __init__(self, method, path, req_headers, req_body):
        self.method, self.path, self.req_headers, self.req_body = method, path, req_headers, req_body
        self.status, self.resp_headers, self.resp_body = None, {}, b""

    def __repr__(self):
        return "<%s %s -> %s, %d+%d bytes>" % (self.method, self.path, self.status, len(self.req_body),
                                               len(self.resp_body))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that leaves before its answer (a CLI stopped at its timeout) is no news.
        pass


class Recorder:
    def __init__(self, upstream, timeout=300):
        self.exchanges = []
        self.lock = threading.Lock()
        up = urllib.parse.urlsplit(upstream)
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _body(self):
                if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                    parts = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0], 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass  # trailers
                            return b"".join(parts)
                        parts.append(self.rfile.read(size))
                        self.rfile.readline()
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _forward(self):
                body = self._body()
                ex = Exchange(self.command, self.path, dict(self.headers.items()), body)
                with recorder.lock:
                    recorder.exchanges.append(ex)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=timeout)
                try:
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    r = conn.getresponse()
                    ex.status, ex.resp_body = r.status, r.read()
                    ex.resp_headers = {k.lower(): v for k, v in r.getheaders()}
                except OSError as e:
                    ex.status, ex.resp_body = 502, ("recorder: upstream error: %s" % e).encode()
                    ex.resp_headers = {"content-type": "text/plain"}
                finally:
                    conn.close()
                self.send_response(ex.status)
                for k, v in ex.resp_headers.items():
                    if k.lower() not in HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(ex.resp_body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(ex.resp_body)

            do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _forward

            def log_message(self, *args):
                pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
