#!/usr/bin/env python3
"""Where augur's time goes, per `bench/run` row, beside the bare forwarder.

For each row (a route and body, as bench/run sends them), with the fake
Ollama as the upstream:

- **instructions per request** under callgrind, for augur, the bare
  forwarder (`bench/bare.rs`) and, when `--before` names one, an earlier
  augur build. Instruction counts do not drift with the load on a shared
  machine: the same binary and requests give the same count to within a
  fraction of a percent, which is what makes them a regression gate
  (`--gate`).
- **a flame graph** of augur under wrk load (perf, cpu-clock samples,
  DWARF call stacks), written to `bench/flames/ROW.svg` with `--flames`.
- **throughput side by side** (`--rounds N`): wrk, 64 connections, the
  targets in turns for N rounds, every round reported; the proxy and the
  upstream share one CPU as in bench/run.

    bench/profile.py                       # instructions per request, every row
    bench/profile.py --flames              # and the flame graphs
    bench/profile.py --before /tmp/augur-main --gate --rounds 3

`--gate` exits 1 when augur runs more than GATE_PCT (2) percent more
instructions per request than `--before` on any row, or when its median
throughput ratio to `--before` falls under 0.95.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASK = '"messages":[{"role":"user","content":"Why is the sky blue?"}]'
# name -> (path, body or None); the bodies bench/run sends.
ROWS = {
    "version": ("/api/version", None),
    "chat": ("/api/chat", '{"model":"llama3.2",' + ASK + "}"),
    "chat-whole": ("/api/chat", '{"model":"llama3.2","stream":false,' + ASK + "}"),
    "v1": ("/v1/chat/completions", '{"model":"llama3.2",' + ASK + "}"),
    "v1-stream": ("/v1/chat/completions", '{"model":"llama3.2","stream":true,' + ASK + "}"),
}
GATE_PCT = float(os.environ.get("GATE_PCT", "2"))


def log(*a):
    print("profile:", *a, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, limit=60.0):
    end = time.time() + limit
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited ({proc.returncode}) before listening on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listening on {port} after {limit}s")


class Procs:
    """Every process started, stopped on exit."""

    def __init__(self):
        self.procs = []

    def start(self, argv, env=None, cpu=None, log_to=None):
        if cpu is not None:
            argv = ["taskset", "-c", str(cpu)] + argv
        out = open(log_to, "ab") if log_to else subprocess.DEVNULL
        p = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=out, stderr=out,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM):
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
                p.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p)


def wrk(port, row, seconds, conns, tmp, cpu=0):
    path, body = ROWS[row]
    argv = ["taskset", "-c", str(cpu), "wrk", "-t1", f"-c{conns}", f"-d{seconds}s"]
    if body is not None:
        script = Path(tmp) / f"{row}.lua"
        script.write_text(
            'wrk.method = "POST"\n'
            f"wrk.body = '{body}'\n"
            'wrk.headers["Content-Type"] = "application/json"\n'
        )
        argv += ["-s", str(script)]
    out = subprocess.run(argv + [f"http://127.0.0.1:{port}{path}"], capture_output=True,
                         text=True, timeout=seconds + 60).stdout
    n = re.search(r"(\d+) requests in", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise RuntimeError(f"{row}: {bad.group(1)} answers were not 2xx")
    return int(n.group(1)) if n else 0, float(rps.group(1)) if rps else 0.0


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="augur-profile.")
        self.procs = Procs()
        (Path(self.tmp) / "policies").mkdir()
        self.fake_port = free_port()
        fake = self.procs.start([str(args.bin / "fake-ollama"), "--listen",
                                 f"127.0.0.1:{self.fake_port}", "--no-record"], cpu=1)
        wait_port(self.fake_port, fake)
        self.upstream = f"http://127.0.0.1:{self.fake_port}"

    def argv(self, target, port):
        """The command line serving `target` on `port`."""
        if target == "bare":
            return [str(self.args.bin / "examples" / "bare"), f"127.0.0.1:{port}", self.upstream]
        binary = self.args.augur if target == "augur" else self.args.before
        return [str(binary), "--listen", f"127.0.0.1:{port}", "--admin-listen",
                f"127.0.0.1:{free_port()}", "--upstream", self.upstream,
                "--policies", str(Path(self.tmp) / "policies")]

    def serve(self, target, wrap=None):
        port = free_port()
        argv = (wrap or []) + self.argv(target, port)
        p = self.procs.start(argv, env={"RUST_LOG": "warn"}, cpu=1,
                             log_to=Path(self.tmp) / f"{target}.log")
        wait_port(port, p, limit=120)
        return p, port

    def instructions(self, target, row):
        """Instructions per request of `target` on `row`, under callgrind."""
        out = Path(self.tmp) / f"cg.{target}.{row}"
        wrap = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                "--instr-atstart=no", "--dump-instr=no"]
        p, port = self.serve(target, wrap)
        try:
            wrk(port, row, 2, 8, self.tmp)  # warm: pool, caches, metric handles
            subprocess.run(["callgrind_control", "-i", "on", str(p.pid)], capture_output=True)
            n, _ = wrk(port, row, self.args.cg_seconds, 8, self.tmp)
            subprocess.run(["callgrind_control", "-d", str(p.pid)], capture_output=True)
        finally:
            self.procs.stop(p)
        dumps = sorted(Path(self.tmp).glob(f"cg.{target}.{row}.*"))
        total = 0
        for d in dumps:
            m = re.search(r"^summary:\s+(\d+)", d.read_text(errors="replace"), re.M)
            if not m:
                m = re.search(r"^totals:\s+(\d+)", d.read_text(errors="replace"), re.M)
            total += int(m.group(1)) if m else 0
        for d in dumps:
            d.unlink()
        if n == 0 or total == 0:
            raise RuntimeError(f"no count for {target} on {row}")
        return total / n

    def flame(self, row):
        p, port = self.serve("augur")
        data = Path(self.tmp) / f"{row}.perf"
        try:
            wrk(port, row, 1, 64, self.tmp)
            load = subprocess.Popen(["taskset", "-c", "0", "wrk", "-t1", "-c64", "-d8s"] +
                                    self.wrk_script(row) + [self.url(port, row)],
                                    stdout=subprocess.DEVNULL)
            time.sleep(1)
            subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "1999", "--call-graph",
                            "dwarf,16384", "-p", str(p.pid), "-o", str(data), "--", "sleep", "4"],
                           capture_output=True)
            load.wait()
        finally:
            self.procs.stop(p)
        script = subprocess.run(["perf", "script", "-i", str(data)], capture_output=True).stdout
        folded = subprocess.run(["inferno-collapse-perf"], input=script, capture_output=True).stdout
        folded = shorten(folded.decode(errors="replace"))
        svg = subprocess.run(["inferno-flamegraph", "--minwidth", "2", "--title",
                              f"augur, {ROWS[row][0]} ({row}), wrk 64 connections"],
                             input=folded.encode(), capture_output=True).stdout
        dest = ROOT / "bench" / "flames"
        dest.mkdir(exist_ok=True)
        (dest / f"{row}.svg").write_bytes(svg)
        data.unlink(missing_ok=True)
        return dest / f"{row}.svg"

    def wrk_script(self, row):
        if ROWS[row][1] is None:
            return []
        return ["-s", str(Path(self.tmp) / f"{row}.lua")]

    def url(self, port, row):
        return f"http://127.0.0.1:{port}{ROWS[row][0]}"

    def throughput(self, targets, row, rounds, seconds):
        """Requests/s of each target on `row`, in turns, each round."""
        served = {t: self.serve(t) for t in targets}
        out = {t: [] for t in targets}
        try:
            for port in (port for _, port in served.values()):
                wrk(port, row, 1, 64, self.tmp)
            for r in range(rounds):
                order = targets[r % len(targets):] + targets[:r % len(targets)]
                for t in order:
                    out[t].append(wrk(served[t][1], row, seconds, 64, self.tmp)[1])
        finally:
            for p, _ in served.values():
                self.procs.stop(p)
        return out


def shorten(folded):
    """Frames without generic arguments and hashes, so that the graph reads."""
    lines = []
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        frames = []
        for f in stack.split(";"):
            f = re.sub(r"::h[0-9a-f]{16}$", "", f)
            prev = None
            while prev != f:
                prev, f = f, re.sub(r"<[^<>]*>", "", f)
            frames.append(f[:120])
        lines.append(";".join(frames) + " " + n)
    return "\n".join(lines) + "\n"


def need(*tools):
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        sys.exit(f"profile: missing {', '.join(missing)} (apt-get install wrk valgrind linux-perf; "
                 "cargo install inferno)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default=",".join(ROWS), help="comma-separated: " + ", ".join(ROWS))
    ap.add_argument("--bin", type=Path, default=ROOT / "target" / "release")
    ap.add_argument("--augur", type=Path, default=None, help="augur binary [BIN/augur]")
    ap.add_argument("--before", type=Path, default=None, help="an earlier augur build to compare")
    ap.add_argument("--flames", action="store_true", help="write bench/flames/ROW.svg")
    ap.add_argument("--rounds", type=int, default=0, help="throughput rounds (0: none)")
    ap.add_argument("--seconds", type=int, default=3, help="seconds per throughput turn")
    ap.add_argument("--cg-seconds", type=int, default=5, help="seconds measured under callgrind")
    ap.add_argument("--gate", action="store_true", help="exit 1 on a regression against --before")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    args.augur = args.augur or args.bin / "augur"
    if args.gate and not args.before:
        sys.exit("profile: --gate needs --before")
    need("wrk", "valgrind", "callgrind_control", "taskset")
    if args.flames:
        need("perf", "inferno-collapse-perf", "inferno-flamegraph")
    if not args.skip_build:
        log("cargo build --release (fake-ollama, bare, augur)")
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "fake-ollama", "--bin", "fake-ollama"],
                       cwd=ROOT, check=True)
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "augur", "--example", "bare",
                        "--bin", "augur"], cwd=ROOT, check=True)
    rows = [r for r in args.rows.split(",") if r]
    for r in rows:
        if r not in ROWS:
            sys.exit(f"profile: unknown row {r}")
    targets = ["augur", "bare"] + (["before"] if args.before else [])
    bench = Bench(args)
    figures = {"instructions": {}, "throughput": {}, "flames": {}}
    failed = []
    try:
        for row in rows:
            for t in targets:
                log(f"{row}: {t} under callgrind")
                figures["instructions"].setdefault(row, {})[t] = bench.instructions(t, row)
            if args.flames:
                log(f"{row}: flame graph")
                figures["flames"][row] = str(bench.flame(row).relative_to(ROOT))
            if args.rounds:
                log(f"{row}: throughput, {args.rounds} rounds")
                figures["throughput"][row] = bench.throughput(targets, row, args.rounds, args.seconds)
    finally:
        bench.procs.stop_all()
        shutil.rmtree(bench.tmp, ignore_errors=True)
    print(report(figures, rows, targets, failed))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    if args.gate and failed:
        print("\nregression: " + "; ".join(failed))
        sys.exit(1)


def report(figures, rows, targets, failed):
    out = ["| Row | " + " | ".join(f"{t} instr/req" for t in targets) + " | augur/bare |"
           + (" augur/before |" if "before" in targets else ""),
           "|---|" + "---:|" * (len(targets) + 1 + ("before" in targets))]
    for row in rows:
        ins = figures["instructions"][row]
        cells = [f"{ins[t]:,.0f}" for t in targets] + [f"{ins['augur'] / ins['bare']:.2f}"]
        if "before" in ins:
            change = ins["augur"] / ins["before"]
            cells.append(f"{change:.3f}")
            if change > 1 + GATE_PCT / 100:
                failed.append(f"{row}: {100 * (change - 1):+.1f}% instructions per request")
        out.append(f"| {row} ({ROWS[row][0]}) | " + " | ".join(cells) + " |")
    if figures["throughput"]:
        out += ["", "| Row | round | " + " | ".join(f"{t} req/s" for t in targets) + " | augur/bare |"
                + (" augur/before |" if "before" in targets else ""),
                "|---|---:|" + "---:|" * (len(targets) + 1 + ("before" in targets))]
        for row, per in figures["throughput"].items():
            ratios = []
            for i in range(len(per["augur"])):
                cells = [f"{per[t][i]:,.0f}" for t in targets]
                cells.append(f"{per['augur'][i] / per['bare'][i]:.2f}" if per["bare"][i] else "–")
                if "before" in per:
                    r = per["augur"][i] / per["before"][i] if per["before"][i] else 0
                    ratios.append(r)
                    cells.append(f"{r:.2f}")
                out.append(f"| {row} | {i + 1} | " + " | ".join(cells) + " |")
            if ratios and statistics.median(ratios) < 0.95:
                failed.append(f"{row}: median throughput {statistics.median(ratios):.2f}× the build before")
    return "\n".join(out)


if __name__ == "__main__":
    main()
