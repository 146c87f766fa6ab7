#!/usr/bin/env python3
"""Schema cache memory: augur's resident memory while clients send
thousands of distinct `format` schemas, against `server.schema_cache_bytes`.

Starts the release augur in front of the fake Ollama (release), warms it
with 16 requests, then sends COUNT distinct ~11 KB schemas per round,
WIDTH at a time, for ROUNDS rounds, and reads augur's RSS after each round.
Two shapes of schema: `form` (three `\\p{L}` name patterns: about 2.6 MB
each compiled, heavier than a small budget) and `plain` (patterns,
bounds, enums and nested objects: tens of KB compiled). A row fails when
the growth since start-up passes the budget plus the allowance.

    cargo build --release -p augur -p fake-ollama
    bench/schema_memory.py                       # 1,200 and 5,000; 8 and 32 MiB
    bench/schema_memory.py --counts 1200 --budgets 8 --shapes form
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1024 * 1024


def plain_schema(i: int) -> dict:
    props: dict = {}
    n = 0
    while len(json.dumps(props, separators=(",", ":"))) < 11_000:
        p = [
            {"type": "string", "pattern": "^[a-z]{1,%d}$" % (40 + n)},
            {"type": "integer", "minimum": i, "maximum": i + n},
            {"enum": ["a%d" % i, "b%d" % n, "c"]},
            {"type": "object", "properties": {"x": {"type": "string", "maxLength": 20}},
             "required": ["x"], "description": "field %d of schema %d" % (n, i)},
        ][n % 4]
        props["f%d_%d" % (n, i)] = p
        n += 1
    return {"type": "object", "properties": props}


def form_schema(i: int) -> dict:
    props: dict = {}
    n = 0
    kinds = ["street", "zip", "age", "country", "phone", "notes"]
    while len(json.dumps(props, separators=(",", ":"))) < 11_000:
        p = [
            {"type": "string", "maxLength": 80},
            {"type": "string", "maxLength": 10},
            {"type": "integer", "minimum": 0, "maximum": 150},
            {"enum": ["DE", "FR", "JP", "X%d" % i]},
            {"type": "string", "maxLength": 20},
            {"type": "string"},
        ][n % 6]
        props["%s_%d_%d" % (kinds[n % 6], n, i)] = p
        n += 1
    for k, field in enumerate(["given_name", "family_name", "city"]):
        props["%s_%d" % (field, i)] = {"type": "string", "pattern": "^[\\p{L}' -]{1,%d}$" % (14 + k)}
    return {"type": "object", "properties": props}


SHAPES = {"form": form_schema, "plain": plain_schema}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_field(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/{pid}/status")


def wait_ready(url: str, proc: subprocess.Popen, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=1):
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    raise RuntimeError(f"{url} not ready in {seconds} s")


def post(base: str, schema: dict) -> int:
    body = json.dumps({"model": "gemma3", "stream": False, "format": schema,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(f"{base}/api/chat", data=body,
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def run_row(args, budget_mib: int, count: int, shape: str) -> dict:
    make = SHAPES[shape]
    work = tempfile.mkdtemp(prefix="augur-schema-memory-")
    config = os.path.join(work, "augur.toml")
    with open(config, "w") as f:
        f.write(f"[server]\nschema_cache_bytes = {budget_mib * MIB}\n")
    os.makedirs(os.path.join(work, "policies"))
    fake_port, port, admin = free_port(), free_port(), free_port()
    fake = subprocess.Popen([args.fake_bin, "--listen", f"127.0.0.1:{fake_port}", "--no-record"],
                            stderr=subprocess.DEVNULL)
    env = dict(os.environ, AUGUR_LOG="warn")
    augur = subprocess.Popen(
        [args.augur_bin, "--config", config, "--listen", f"127.0.0.1:{port}",
         "--admin-listen", f"127.0.0.1:{admin}", "--upstream", f"http://127.0.0.1:{fake_port}",
         "--policies", os.path.join(work, "policies")],
        stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"http://127.0.0.1:{fake_port}/api/version", fake)
        wait_ready(f"{base}/api/version", augur)
        start = status_field(augur.pid, "VmRSS:")
        row = {"budget_mib": budget_mib, "count": count, "shape": shape, "start": start, "rounds": []}
        with concurrent.futures.ThreadPoolExecutor(args.width) as pool:
            statuses = list(pool.map(lambda i: post(base, make(i)), range(1_000_000, 1_000_016)))
            row["warm"] = status_field(augur.pid, "VmRSS:")
            for r in range(args.rounds):
                ids = range(r * count, (r + 1) * count)
                statuses += list(pool.map(lambda i: post(base, make(i)), ids))
                row["rounds"].append(status_field(augur.pid, "VmRSS:"))
        row["peak"] = status_field(augur.pid, "VmHWM:")
        row["errors"] = sum(1 for s in statuses if s >= 500)
        return row
    finally:
        augur.kill()
        fake.kill()
        augur.wait()
        fake.wait()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench/schema_memory.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--augur-bin", default=os.path.join(ROOT, "target/release/augur"))
    p.add_argument("--fake-bin", default=os.path.join(ROOT, "target/release/fake-ollama"))
    p.add_argument("--budgets", default="8,32", help="schema_cache_bytes values, MiB")
    p.add_argument("--counts", default="1200,5000", help="distinct schemas per round")
    p.add_argument("--shapes", default="form,plain")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--width", type=int, default=16, help="requests at once")
    p.add_argument("--allowance-mib", type=int, default=48,
                   help="growth allowed past the budget, since start-up")
    args = p.parse_args(argv)
    print(f"{'shape':6} {'budget':>7} {'schemas':>8} {'start':>6} {'warm':>6} "
          f"{'after each round (growth since start)':40} {'peak':>6}  verdict")
    failed = 0
    for shape in args.shapes.split(","):
        for count in (int(c) for c in args.counts.split(",")):
            for budget in (int(b) for b in args.budgets.split(",")):
                row = run_row(args, budget, count, shape)
                limit = (budget + args.allowance_mib) * MIB
                worst = max(row["rounds"]) - row["start"]
                ok = worst <= limit and row["errors"] == 0
                failed += not ok
                rounds = ", ".join(f"{r // MIB} (+{(r - row['start']) // MIB})" for r in row["rounds"])
                print(f"{shape:6} {budget:>4} MiB {count:>8} {row['start'] // MIB:>4} M "
                      f"{row['warm'] // MIB:>4} M {rounds:40} {row['peak'] // MIB:>4} M  "
                      f"{'ok' if ok else 'OVER'} (limit +{limit // MIB} MiB, 5xx {row['errors']})",
                      flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
