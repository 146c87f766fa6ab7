"""Session fixtures for the end-to-end suite.

A real upstream (llama-server running Gemma 3 270M, behind model-server/ollama_front, which
speaks Ollama's wire protocol) and augur in front of it, all on free loopback
ports. `scripts/real-upstream build` must have run first; anything missing is a
failure, never a skip.

Fixtures: front_url (the Ollama-compatible upstream, direct), augur_url,
admin_url, policies_dir (with the small-model rules on for the model), model_name,
tools_model_name (the same GGUF served as tool-capable: native tool calls).

Environment: AUGUR_BIN (default target/debug/augur under the repository root),
AUGUR_CACHE (where scripts/real-upstream keeps its builds).
"""

import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRONT = ROOT / "model-server" / "ollama_front"  # a package, runnable by its path


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _real_upstream_env():
    script = ROOT / "scripts" / "real-upstream"
    out = subprocess.run([str(script), "env"], capture_output=True, text=True, check=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env


class Service:
    """A child process with its output in a log file; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, name, argv, log_dir, env=None):
        self.name, self.argv = name, [str(a) for a in argv]
        self.log_path = Path(log_dir) / (name + ".log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env)

    def log_tail(self, lines=30):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, url, timeout):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("%s exited with status %s before %s answered 200\ncommand: %s\n--- %s ---\n%s"
                            % (self.name, self.proc.returncode, url, " ".join(self.argv), self.log_path,
                               self.log_tail()), pytrace=False)
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return
                    last = r.status
            except urllib.error.HTTPError as e:
                last = e.code
            except OSError as e:
                last = e
            time.sleep(0.1)
        self.stop()
        pytest.fail("%s: %s not ready after %ss (last: %s)\n--- %s ---\n%s"
                    % (self.name, url, timeout, last, self.log_path, self.log_tail()), pytrace=False)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


@pytest.fixture(scope="session")
def log_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    sys.stderr.write("\n[e2e] service logs: %s\n" % d)
    return d


@pytest.fixture(scope="session")
def upstream_paths():
    env = _real_upstream_env()
    missing = [env[k] for k in ("AUGUR_LLAMA_SERVER", "AUGUR_GGUF") if not Path(env[k]).is_file()]
    if missing:
        pytest.fail("real upstream not built (missing: %s); run scripts/real-upstream build"
                    % ", ".join(missing), pytrace=False)
    return env


@pytest.fixture(scope="session")
def model_name(upstream_paths):
    return upstream_paths["AUGUR_MODEL"]


@pytest.fixture(scope="session")
def tools_model_name(upstream_paths):
    return upstream_paths["AUGUR_TOOLS_MODEL"]


@pytest.fixture(scope="session")
def llama_url(upstream_paths, log_dir):
    port = _free_port()
    svc = Service("llama-server", [upstream_paths["AUGUR_LLAMA_SERVER"], "-m", upstream_paths["AUGUR_GGUF"],
                                   "--no-jinja", "--chat-template", "gemma", "--host", "127.0.0.1",
                                   "--port", port, "-c", "4096", "-t", "1", "-np", "1",
                                   "--alias", upstream_paths["AUGUR_MODEL"]], log_dir)
    url = "http://127.0.0.1:%d" % port
    try:
        svc.wait_ready(url + "/health", 120)
        yield url
    finally:
        svc.stop()


@pytest.fixture(scope="session")
def front_url(llama_url, upstream_paths, log_dir):
    port = _free_port()
    svc = Service("ollama-front", [sys.executable, FRONT, "--port", port, "--llama-url", llama_url,
                                   "--model", upstream_paths["AUGUR_MODEL"], "--gguf", upstream_paths["AUGUR_GGUF"],
                                   "--tools-model", upstream_paths["AUGUR_TOOLS_MODEL"]],
                  log_dir)
    url = "http://127.0.0.1:%d" % port
    try:
        svc.wait_ready(url + "/api/version", 30)
        yield url
    finally:
        svc.stop()


@pytest.fixture(scope="session")
def policies_dir(tmp_path_factory, model_name):
    """Holds small-model.yaml: the 270M model here is what the small-model
    rules are for, and the README tells its users to turn them on; and
    guard.yaml, a tool-call guard on `fetch_url` URLs."""
    d = tmp_path_factory.mktemp("policies")
    (d / "small-model.yaml").write_text(
        'models:\n  "%s":\n    tools: {small_model: true}\n' % model_name)
    # The guard an agent that fetches URLs runs under (test_tool_guard.py).
    (d / "guard.yaml").write_text(
        'models:\n  "%s":\n    tools:\n      guard:\n        rules:\n'
        '          - id: ssrf\n            tool: fetch_url\n            pointer: /url\n'
        '            url: {block_private: true}\n'
        '          - id: docs-only\n            tool: read_file\n            pointer: /path\n'
        '            path_prefix: [/srv/docs]\n' % model_name)
    return d


@pytest.fixture(scope="session")
def _augur(front_url, policies_dir, log_dir):
    binary = Path(os.environ.get("AUGUR_BIN") or ROOT / "target" / "debug" / "augur")
    if not binary.is_absolute():
        binary = ROOT / binary
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        pytest.fail("augur binary not found at %s: run `cargo build` or set AUGUR_BIN" % binary, pytrace=False)
    port, admin = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if k != "AUGUR_CONFIG"}
    svc = Service("augur", [binary, "--listen", "127.0.0.1:%d" % port, "--admin-listen", "127.0.0.1:%d" % admin,
                            "--upstream", front_url, "--policies", policies_dir], log_dir, env=env)
    urls = ("http://127.0.0.1:%d" % port, "http://127.0.0.1:%d" % admin)
    try:
        svc.wait_ready(urls[1] + "/-/healthy", 30)
        yield urls
    finally:
        svc.stop()


@pytest.fixture(scope="session")
def augur_url(_augur):
    return _augur[0]


@pytest.fixture(scope="session")
def admin_url(_augur):
    return _augur[1]
