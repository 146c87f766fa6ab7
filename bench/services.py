"""What the benchmarks share to run real processes: free ports, plain HTTP GETs, a child
process with its output in a log file, and the real upstream's paths (scripts/real-upstream env)."""

from __future__ import annotations

import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


class Service:
    """A child process with its output in a log file; stopped with SIGTERM, then SIGKILL."""

    def __init__(self, name: str, argv: list, log_dir: Path, env: dict | None = None):
        self.name, self.argv = name, [str(a) for a in argv]
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env, cwd=log_dir)

    def wait_ready(self, url: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}) before {url} answered; "
                                   f"log: {self.log_path}\n{self.tail()}")
            try:
                status, _ = http_get(url, 2)
                if status == 200:
                    return
                last = status
            except OSError as e:
                last = e
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: {url} not ready after {timeout}s (last: {last}); log: {self.log_path}")

    def tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


def real_upstream_env() -> dict[str, str]:
    out = subprocess.run([str(ROOT / "scripts" / "real-upstream"), "env"],
                         capture_output=True, text=True, check=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export "):].partition("=")
            env[key] = shlex.split(value)[0] if value else ""
    return env
