"""augur exporting traces to a real OTLP receiver: Arize Phoenix
(PyPI `arize-phoenix`), which takes OTLP/HTTP on /v1/traces and serves
the spans it stored over its REST API.

Starts Phoenix from this venv (its own telemetry and every outside request
off, a fresh working directory), then target/debug/fake-ollama and
target/debug/augur (built by `cargo build --bins -p augur -p fake-ollama`) on free
loopback ports, augur configured the OpenTelemetry way
(`OTEL_EXPORTER_OTLP_ENDPOINT`). A missing binary fails the run: nothing
here is skipped.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug"
# The model whose answers never match the test's schema (it echoes the
# request), and the fallback model that answers a valid instance.
POLICY = 'models:\n  echo: {fallback: {models: ["llama3.2"]}}\n'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, log: str, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited ({proc.returncode}); see {log}")
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up in {timeout}s; see {log}")


def stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()


@pytest.fixture(scope="session")
def phoenix():
    port, grpc_port = free_port(), free_port()
    workdir = tempfile.mkdtemp(prefix="augur-phoenix-")
    log_path = os.path.join(workdir, "phoenix.log")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env.update({
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": workdir,
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "DO_NOT_TRACK": "1",
    })
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "phoenix.server.main", "serve"],
            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=workdir,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/healthz", proc, log_path, timeout=120.0)
        yield url
    finally:
        stop(proc)


@pytest.fixture(scope="session")
def stack(phoenix):
    for name in ("fake-ollama", "augur"):
        if not (BIN / name).exists():
            pytest.fail(f"{BIN / name} is missing: run `cargo build --bins -p augur -p fake-ollama` first",
                        pytrace=False)
    fake_port, port, admin = free_port(), free_port(), free_port()
    logdir = tempfile.mkdtemp(prefix="augur-otel-")
    policies = tempfile.mkdtemp(prefix="augur-otel-policies-")
    with open(os.path.join(policies, "10-fallback.yaml"), "w") as f:
        f.write(POLICY)
    fake_log = open(os.path.join(logdir, "fake.log"), "w")
    augur_log = open(os.path.join(logdir, "augur.log"), "w")
    fake = subprocess.Popen([str(BIN / "fake-ollama"), "--listen", f"127.0.0.1:{fake_port}"],
                            stdout=fake_log, stderr=subprocess.STDOUT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AUGUR_", "OTEL_"))}
    env.update({
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix,
        "OTEL_SERVICE_NAME": "augur-under-test",
        # Export within a fraction of a second instead of the SDK's 5 s.
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    })
    augur = subprocess.Popen(
        [
            str(BIN / "augur"),
            "--listen", f"127.0.0.1:{port}",
            "--admin-listen", f"127.0.0.1:{admin}",
            "--upstream", f"http://127.0.0.1:{fake_port}",
            "--policies", policies,
        ],
        stdout=augur_log, stderr=subprocess.STDOUT, env=env, cwd=logdir,
    )
    try:
        wait_http(f"http://127.0.0.1:{fake_port}/", fake, fake_log.name)
        wait_http(f"http://127.0.0.1:{admin}/-/healthy", augur, augur_log.name)
        yield {
            "url": f"http://127.0.0.1:{port}",
            "admin": f"http://127.0.0.1:{admin}",
            "phoenix": phoenix,
            "log": augur_log.name,
        }
    finally:
        stop(augur, fake)
