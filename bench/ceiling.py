#!/usr/bin/env python3
"""bench/ceiling.py: throughput at fixed p99 bounds, for bench/run's row (i).

For each target, the highest request rate at which its p99 latency stays under each bound
(1, 5 and 10 ms by default), with bench/loadgen's open-loop fixed-rate mode. Each step is a
short run at one rate. The rates climb a ladder (doubling from --start) while a target still
meets the largest bound; then, per target and bound, the rate is bisected (geometrically)
between the last rung it met and the first it missed. At every step the targets take turns,
one short run each, the order rotating, so that noise on the machine falls on all of them
alike. The whole search stops when --budget seconds are spent: what was found by then is
reported, with the bound it could not narrow further marked.

A step "meets" a bound when there were no errors, the achieved rate was at least 95 % of the
asked rate (a target that falls behind queues, and its latency is then the queue's), and the
p99 was under the bound. A miss is confirmed by a second step at the same rate (one stall of
the machine does not end a target's climb); the best of the two counts.

Prints one JSON object: {"path":..., "bounds_ms":[...], "targets":{name: {"<bound>":
{"rps":R or null, "p99_us":P, "above":first missed rate or null}}}, "steps":N, "seconds":S}.

usage: ceiling.py --loadgen BIN --target NAME=URL ... [--path P] [--body B] [options]
"""

import argparse
import json
import math
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--target", action="append", required=True, help="NAME=URL")
    ap.add_argument("--path", default="/api/version")
    ap.add_argument("--body")
    ap.add_argument("--bounds-ms", default="1,5,10")
    ap.add_argument("--start", type=int, default=250, help="first rate of the ladder, req/s")
    ap.add_argument("--max", type=int, default=64000, help="highest rate tried, req/s")
    ap.add_argument("--step-s", type=float, default=1.0, help="measured seconds per step")
    ap.add_argument("--min-samples", type=int, default=500,
                    help="a step lasts long enough for this many requests (a p99 needs them)")
    ap.add_argument("--warmup-s", type=float, default=0.3, help="unmeasured seconds before each step")
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--bisect", type=int, default=3, help="bisection rounds per bound")
    ap.add_argument("--budget", type=float, default=120, help="seconds for the whole search")
    ap.add_argument("--prefix", default="", help="command prefix, split on spaces (taskset -c 0)")
    a = ap.parse_args()
    bounds = [float(b) for b in a.bounds_ms.split(",")]
    targets = dict(t.split("=", 1) for t in a.target)
    names = list(targets)
    began = time.monotonic()
    steps = 0
    # (target, rate) -> loadgen's JSON per step at that rate (None: the step failed outright).
    seen = {}

    def over_budget():
        return time.monotonic() - began > a.budget

    def measure(name, rate):
        nonlocal steps
        steps += 1
        cmd = a.prefix.split() + [a.loadgen, "--url", targets[name], "--path", a.path, "--request-timeout", "2"]
        if a.body:
            cmd += ["--body", a.body]
        secs = max(a.step_s, a.min_samples / rate)
        cmd += ["rate", "--rate", str(rate), "--duration", f"{secs:.2f}", "--conns", str(a.conns),
                "--warmup", str(a.warmup_s)]
        # A target far past its capacity drains its queue after the step; bounded.
        limit = 4 * (secs + a.warmup_s) + 10
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=limit).stdout
            r = json.loads(out.strip().splitlines()[-1])
        except Exception:
            r = None
        seen.setdefault((name, rate), []).append(r)

    def meets_one(r, rate, bound_ms):
        if r is None or r.get("errors", 1) or not r.get("requests"):
            return False
        if r.get("rps", 0) < 0.95 * rate:
            return False
        return r.get("p99_us", 1e12) < bound_ms * 1000

    def meets(name, rate, bound_ms):
        """Whether a step at `rate` met the bound: a miss counts once a second step confirms it
        (one stall of the machine does not end a target's climb)."""
        return any(meets_one(r, rate, bound_ms) for r in seen.get((name, rate), []))

    def best(name, rate, bound_ms):
        """The step that met the bound with the lowest p99."""
        ok = [r for r in seen.get((name, rate), []) if meets_one(r, rate, bound_ms)]
        return min(ok, key=lambda r: r["p99_us"]) if ok else None

    def confirm(jobs, bounds_of):
        """Steps again at the (target, rate) jobs that missed one of their bounds once."""
        again = [(n, r) for n, r in jobs if len(seen.get((n, r), [])) == 1
                 and any(not meets(n, r, b) for b in bounds_of(n, r))]
        if again:
            turns(again)

    def turns(jobs):
        """Run (name, rate) jobs with the targets taking turns; the order rotates per call."""
        turns.k = getattr(turns, "k", 0) + 1
        by = {n: [r for m, r in jobs if m == n] for n in names}
        order = names[turns.k % len(names):] + names[:turns.k % len(names)]
        while any(by.values()) and not over_budget():
            for n in order:
                if by[n] and not over_budget():
                    measure(n, by[n].pop(0))

    # The ladder: doubling while a target meets the largest bound.
    ladder = []
    rate = a.start
    while rate <= a.max:
        ladder.append(rate)
        rate *= 2
    active = set(names)
    climbed = {n: [] for n in names}
    for rate in ladder:
        if not active or over_budget():
            break
        jobs = [(n, rate) for n in names if n in active]
        turns(jobs)
        confirm(jobs, lambda n, r: [max(bounds)])
        for n in list(active):
            if (n, rate) not in seen:
                active.discard(n)
                continue
            climbed[n].append(rate)
            if not meets(n, rate, max(bounds)):
                active.discard(n)

    # Per target and bound: the last rung met (lo) and the first missed (hi).
    window = {}
    for n in names:
        for b in bounds:
            # The highest rung met, and the first one above it missed (a miss below a rung
            # met is the machine's noise, not the target's limit).
            met = [r for r in climbed[n] if meets(n, r, b)]
            lo = max(met) if met else None
            missed = [r for r in climbed[n] if not meets(n, r, b) and (lo is None or r > lo)]
            hi = min(missed) if missed else None
            window[n, b] = [lo, hi]
    # Bisection, geometric, the targets in turns.
    for _ in range(a.bisect):
        if over_budget():
            break
        jobs = []
        for n in names:
            for b in bounds:
                lo, hi = window[n, b]
                if lo is None or hi is None or hi / lo < 1.05:
                    continue
                mid = int(round(math.sqrt(lo * hi) / 10) * 10)
                if (n, mid) not in jobs and mid not in (lo, hi):
                    jobs.append((n, mid))
        if not jobs:
            break
        turns(jobs)
        confirm(jobs, lambda n, r: [b for b in bounds if window[n, b][0] and window[n, b][1]
                                    and window[n, b][0] < r < window[n, b][1]])
        for n in names:
            for b in bounds:
                lo, hi = window[n, b]
                if lo is None or hi is None:
                    continue
                mid = int(round(math.sqrt(lo * hi) / 10) * 10)
                if (n, mid) not in seen or mid in (lo, hi):
                    continue
                if meets(n, mid, b):
                    window[n, b][0] = mid
                else:
                    window[n, b][1] = mid

    out = {"path": a.path, "bounds_ms": bounds, "targets": {}, "steps": steps,
           "seconds": round(time.monotonic() - began, 1), "budget_spent": over_budget()}
    for n in names:
        per = {}
        for b in bounds:
            lo, hi = window[n, b]
            r = best(n, lo, b) if lo else None
            per[f"{b:g}"] = {"rps": lo, "p99_us": r.get("p99_us") if r else None, "above": hi,
                             "capped": lo is not None and hi is None}
        out["targets"][n] = per
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
