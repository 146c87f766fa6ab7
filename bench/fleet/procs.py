"""The processes of a row: two real upstreams (llama-server + the Ollama front each) and
augur in front of both; and what each one says about the requests it served (llama-server's
per-task log lines, augur's metrics)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
from services import Service, free_port, http_get, real_upstream_env  # noqa: E402


def http_post(url: str, body: dict, timeout: float = 120.0) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def llama_args(slots: int, ctx_per_slot: int, similarity: float, cache_ram: int | None = None) -> list[str]:
    """The slot setup (see bench/README.md): `slots` slots of `ctx_per_slot` tokens each, so that
    a server keeps that many conversations' prompts; the full sliding-window cache, without which
    Gemma 3's sliding-window layers forget a prefix once a slot has moved past it; and a slot
    taken for a request only when its prompt shares `similarity` of the request's (else the least
    recently used slot), so that a new conversation does not take over another one's slot just
    because both start with the same system prompt. `cache_ram` (MiB) bounds llama-server's
    host-memory copy of prompts that left their slot (8 GiB unless given); 0 turns it off, so a
    server keeps no more conversations than its slots, as Ollama's runner does."""
    ram = [] if cache_ram is None else ["--cache-ram", str(cache_ram)]
    return ["-c", str(slots * ctx_per_slot), "-np", str(slots), "--swa-full",
            "--slot-prompt-similarity", str(similarity), *ram, "--metrics"]


class Upstream:
    """llama-server + the Ollama front, as scripts/real-upstream starts them, with the slot setup
    of [`llama_args`]; llama-server pinned to one CPU when `cpu` is given."""

    def __init__(self, name: str, log_dir: Path, env: dict[str, str], extra: list[str], cpu: int | None):
        self.name, self.log_dir, self.env, self.extra, self.cpu = name, log_dir, env, extra, cpu
        self.model = env["AUGUR_MODEL"]
        self.llama_port, self.front_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.front_port}"
        self.llama_url = f"http://127.0.0.1:{self.llama_port}"
        self.llama: Service | None = None
        self.front: Service | None = None
        self.starts = 0

    @property
    def llama_log(self) -> Path:
        assert self.llama is not None
        return self.llama.log_path

    def start(self) -> None:
        self.stop()
        self.starts += 1
        e = self.env
        pin = ["taskset", "-c", str(self.cpu)] if self.cpu is not None and shutil.which("taskset") else []
        self.llama = Service(f"llama-{self.name}-{self.starts}", pin + [
            e["AUGUR_LLAMA_SERVER"], "-m", e["AUGUR_GGUF"], "--no-jinja", "--chat-template", "gemma",
            "--host", "127.0.0.1", "--port", self.llama_port, "-t", "1", "--alias", self.model]
            + self.extra, self.log_dir)
        self.llama.wait_ready(self.llama_url + "/health", 300)
        self.front = Service(f"front-{self.name}-{self.starts}", [
            e["AUGUR_PYTHON"], ROOT / "model-server" / "ollama_front", "--port", self.front_port,
            "--llama-url", self.llama_url, "--model", self.model, "--gguf", e["AUGUR_GGUF"]], self.log_dir)
        self.front.wait_ready(self.url + "/api/version", 60)

    def warm(self) -> None:
        """One tiny request straight to the front, so that its /api/ps lists the model as loaded
        (augur prefers upstreams with the model loaded, as it does with Ollama)."""
        http_post(self.url + "/api/generate", {"model": self.model, "prompt": f"warm {self.name}",
                                               "stream": False, "options": {"num_predict": 1}})

    def prompt_tokens_total(self) -> float:
        """llama-server's count of prompt tokens it evaluated (cached ones are not counted)."""
        _, text = http_get(self.llama_url + "/metrics")
        m = re.search(r"^llamacpp:prompt_tokens_total\s+([0-9.e+]+)", text, re.M)
        return float(m.group(1)) if m else float("nan")

    def stop(self) -> None:
        for svc in (self.front, self.llama):
            if svc:
                svc.stop()
        self.front = self.llama = None


class Augur:
    """augur (release build) in front of the upstreams, with `policy` as its one policy file."""

    def __init__(self, binary: Path, upstreams: list[Upstream], log_dir: Path, name: str, policy: dict):
        pdir = log_dir / f"{name}-policies"
        pdir.mkdir(parents=True, exist_ok=True)
        (pdir / "10-bench.yaml").write_text(json.dumps(policy) + "\n")
        port, admin = free_port(), free_port()
        self.url, self.admin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{admin}"
        env = {k: v for k, v in os.environ.items() if k not in ("AUGUR_CONFIG", "AUGUR_UPSTREAM")}
        env["RUST_LOG"] = "warn"
        ups = ",".join(f"{u.name}={u.url}" for u in upstreams)
        self.svc = Service(name, [binary, "--listen", f"127.0.0.1:{port}", "--admin-listen",
                                  f"127.0.0.1:{admin}", "--upstream", ups, "--policies", pdir], log_dir, env=env)
        self.svc.wait_ready(self.admin + "/-/healthy", 60)

    def upstreams(self) -> list[dict]:
        """`GET /-/upstreams`: probes every upstream (health, models, loaded models) now."""
        status, body = http_get(self.admin + "/-/upstreams", 30)
        if status != 200:
            raise RuntimeError(f"/-/upstreams answered {status}: {body[:200]}")
        data = json.loads(body)
        return data["upstreams"] if isinstance(data, dict) else data

    def metrics(self) -> str:
        return http_get(self.admin + "/metrics", 5)[1]

    def stop(self) -> None:
        self.svc.stop()


def metric_values(text: str, name: str, label: str) -> dict[str, float]:
    """`name{...label="x"...} v` lines of a Prometheus text, summed by the label's value."""
    out: dict[str, float] = {}
    pat = re.compile(r"^" + re.escape(name) + r"\{([^}]*)\}\s+([0-9.eE+-]+)$", re.M)
    for labels, value in pat.findall(text):
        m = re.search(label + r'="([^"]*)"', labels)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(value)
    return out


@dataclass
class Task:
    """One request as llama-server's log tells it."""
    upstream: str
    prompt_n: int = -1  # prompt tokens evaluated (the rest came from the cache)
    prompt_ms: float = -1.0
    eval_n: int = -1
    n_tokens: int = -1  # the slot's tokens when it ended: the prompt, and the tokens generated but the last


_TASK = re.compile(r"\|\s*task\s+(\d+)\s*\|\s*(.*)$")


def read_tasks(upstream: str, log: Path) -> list[Task]:
    tasks: dict[int, Task] = {}
    for line in log.read_text(errors="replace").splitlines():
        m = _TASK.search(line)
        if not m:
            continue
        rest = m.group(2)
        t = tasks.setdefault(int(m.group(1)), Task(upstream))
        if p := re.match(r"prompt eval time =\s*([0-9.]+) ms /\s*(\d+) tokens", rest):
            t.prompt_ms, t.prompt_n = float(p.group(1)), int(p.group(2))
        elif p := re.match(r"eval time =\s*([0-9.]+) ms /\s*(\d+) tokens", rest):
            t.eval_n = int(p.group(2))
        elif p := re.match(r"stop processing: n_tokens = (\d+)", rest):
            t.n_tokens = int(p.group(1))
    return [t for t in tasks.values() if t.prompt_n >= 0]


def attribute(records: list[dict], tasks: list[Task]) -> int:
    """Set each record's `upstream` and `evaluated` (prompt tokens evaluated) from the task whose
    prompt size and prompt time are the ones its done chunk reported (prompt_eval_count counts
    the whole prompt, cached tokens included, as Ollama's does; prompt_eval_duration is
    llama-server's prompt time). Returns how many records found no task."""
    free = list(tasks)
    missed = 0
    for r in records:
        want_ms = r.get("prompt_eval_duration", 0) / 1e6

        def fits(t: Task) -> bool:
            size = t.n_tokens - t.eval_n + 1 if t.n_tokens >= 0 and t.eval_n >= 0 else -1
            return abs(t.prompt_ms - want_ms) < 0.02 and size in (r.get("prompt_eval_count"),
                                                                 r.get("prompt_eval_count", 0) + 1)

        hit = next((t for t in free if fits(t)), None)
        if hit is None:
            hit = next((t for t in free if abs(t.prompt_ms - want_ms) < 0.02), None)
        if hit is None:
            missed += 1
            continue
        free.remove(hit)
        r["upstream"], r["evaluated"] = hit.upstream, hit.prompt_n
    return missed
