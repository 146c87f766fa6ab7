"""Fixtures for the front's own tests: a fake llama-server and the front before it.

`fake` is a FakeLlama (tests/fake_llama.py) whose replies a test scripts;
`front` is the front, started as `python model-server/ollama_front` (the way the
scripts start it) against the fake, with a 1 MiB body bound. `call` sends one
raw HTTP request to the front and returns a Response.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fake_llama import FakeLlama

PACKAGE = Path(__file__).resolve().parents[1] / "ollama_front"
MODEL = "gemma3:270m"
MAX_BODY = 1 << 20


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def lines(self) -> list[Any]:
        """NDJSON lines, decoded."""
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]

    def events(self) -> list[tuple[str | None, Any]]:
        """SSE events as (event name or None, decoded data); `[DONE]` stays a string."""
        out = []
        for block in self.body.decode().split("\n\n"):
            if not block.strip():
                continue
            name, data = None, None
            for line in block.split("\n"):
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data = line[6:]
            out.append((name, data if data == "[DONE]" else json.loads(data)))
        return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def fake_server() -> FakeLlama:
    fake = FakeLlama()
    yield fake
    fake.close()


@pytest.fixture
def fake(fake_server: FakeLlama) -> FakeLlama:
    fake_server.reset()
    return fake_server


@pytest.fixture(scope="session")
def front(fake_server: FakeLlama, tmp_path_factory: pytest.TempPathFactory) -> str:
    port = _free_port()
    log = tmp_path_factory.mktemp("front") / "front.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, str(PACKAGE), "--port", str(port), "--llama-url", fake_server.url,
                                 "--model", MODEL, "--max-body-bytes", str(MAX_BODY)],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the front did not start:\n" + log.read_text(errors="replace"), pytrace=False)
                time.sleep(0.05)
        yield "127.0.0.1:%d" % port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def call(front: str):
    """call(method, path, body=None, headers=None) -> Response; a dict or list body is sent as JSON."""

    def do(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Response:
        host, port = front.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body)
            conn.request(method, path, body=body, headers={"Host": front, **(headers or {})})
            r = conn.getresponse()
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()

    return do
