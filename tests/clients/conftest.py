"""The official Python clients against augur in front of the fake Ollama.

Starts target/debug/fake-ollama and target/debug/augur (built by
`cargo build --bins`) on free loopback ports. A missing binary fails the
run: nothing here is skipped.
"""
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug"
# The key of the one API key the stack defines (scopes generate, read, manage).
OPS_KEY = "ops-test-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up in {timeout}s")


def start(cmd, log):
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture(scope="session")
def stack():
    for name in ("fake-ollama", "augur"):
        if not (BIN / name).exists():
            pytest.fail(f"{BIN / name} is missing: run `cargo build --bins` first", pytrace=False)
    fake_port, port, admin = free_port(), free_port(), free_port()
    logdir = tempfile.mkdtemp(prefix="augur-clients-")
    policies = tempfile.mkdtemp(prefix="augur-policies-")
    # Anonymous callers may generate and read; the model store needs a key
    # with the manage scope.
    with open(os.path.join(policies, "10-keys.yaml"), "w") as f:
        f.write("auth:\n  keys:\n    - {id: ops, key_env: AUGUR_TEST_OPS_KEY, scopes: [generate, read, manage]}\n")
    # A tool-call guard on `fetch_url` URLs (test_tool_guard.py).
    with open(os.path.join(policies, "20-guard.yaml"), "w") as f:
        f.write('models:\n  "tool-json":\n    tools:\n      guard:\n        rules:\n'
                '          - {id: ssrf, tool: fetch_url, pointer: /url, url: {block_private: true}}\n')
    fake_log = open(os.path.join(logdir, "fake.log"), "w")
    augur_log = open(os.path.join(logdir, "augur.log"), "w")
    fake = start([str(BIN / "fake-ollama"), "--listen", f"127.0.0.1:{fake_port}"], fake_log)
    env = dict(os.environ)
    env.pop("AUGUR_CONFIG", None)
    env["AUGUR_TEST_OPS_KEY"] = OPS_KEY
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
        wait_http(f"http://127.0.0.1:{fake_port}/")
        wait_http(f"http://127.0.0.1:{admin}/-/healthy")
        yield {
            "url": f"http://127.0.0.1:{port}",
            "admin": f"http://127.0.0.1:{admin}",
            "fake": f"http://127.0.0.1:{fake_port}",
        }
    finally:
        for p in (augur, fake):
            p.terminate()
        for p in (augur, fake):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()


def openssl(cwd: str, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_certificates(d: str) -> dict:
    """A CA of its own and a certificate it signs for localhost and
    127.0.0.1 (an EC P-256 key), made with the openssl command."""
    openssl(d, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-subj", "/CN=augur test CA", "-days", "2",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl(d, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=localhost")
    with open(os.path.join(d, "tls.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
    openssl(d, "x509", "-req", "-in", "tls.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "tls.crt", "-days", "2", "-extfile", "tls.ext")
    return {name: os.path.join(d, file) for name, file in
            (("ca", "ca.pem"), ("cert", "tls.crt"), ("key", "tls.key"))}


@pytest.fixture(scope="session")
def tls_stack():
    """augur serving HTTPS (--tls-cert/--tls-key) in front of the fake; the
    admin listener stays plain HTTP. Yields the https:// URL and the CA."""
    for name in ("fake-ollama", "augur"):
        if not (BIN / name).exists():
            pytest.fail(f"{BIN / name} is missing: run `cargo build --bins` first", pytrace=False)
    fake_port, port, admin = free_port(), free_port(), free_port()
    logdir = tempfile.mkdtemp(prefix="augur-tls-clients-")
    policies = tempfile.mkdtemp(prefix="augur-tls-policies-")
    certs = make_certificates(tempfile.mkdtemp(prefix="augur-tls-certs-"))
    fake_log = open(os.path.join(logdir, "fake.log"), "w")
    augur_log = open(os.path.join(logdir, "augur.log"), "w")
    fake = start([str(BIN / "fake-ollama"), "--listen", f"127.0.0.1:{fake_port}"], fake_log)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUGUR_")}
    augur = subprocess.Popen(
        [
            str(BIN / "augur"),
            "--listen", f"127.0.0.1:{port}",
            "--admin-listen", f"127.0.0.1:{admin}",
            "--upstream", f"http://127.0.0.1:{fake_port}",
            "--policies", policies,
            "--tls-cert", certs["cert"],
            "--tls-key", certs["key"],
        ],
        stdout=augur_log, stderr=subprocess.STDOUT, env=env, cwd=logdir,
    )
    try:
        wait_http(f"http://127.0.0.1:{fake_port}/")
        wait_http(f"http://127.0.0.1:{admin}/-/healthy")
        yield {"url": f"https://127.0.0.1:{port}", "ca": certs["ca"], "log": augur_log.name}
    finally:
        for p in (augur, fake):
            p.terminate()
        for p in (augur, fake):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
