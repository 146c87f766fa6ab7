"""Prefix-affinity routing against least-loaded routing on two real upstreams (llama-server +
the Ollama front each), augur in front of both: the same conversations through each, the
upstreams restarted cold before every row. Prints Markdown tables (see bench/README.md)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import procs  # noqa: E402
import workload  # noqa: E402

ROUTINGS = ("affinity", "least_loaded")
# A later turn adds about 35 prompt tokens (the last answer, the new question, the turn markers):
# one that evaluates more found less than its previous turn in the cache.
MISS_TOKENS = 60
# The conversations, their turns and each server's slots. `fits`: every server has a slot for
# every conversation (and llama-server's host-memory prompt cache on), so a conversation moved to
# the other server often finds its older turns there. `outnumbers`: twice as many live
# conversations as a server keeps, the host-memory cache off (Ollama's runner keeps
# OLLAMA_NUM_PARALLEL slots, nothing besides), so a moved conversation usually finds its slot
# taken by another one.
WORKLOADS = {"fits": {"convs": 6, "turns": 6, "slots": 6, "cache_ram": None},
             "outnumbers": {"convs": 12, "turns": 4, "slots": 6, "cache_ram": 0}}


def log(msg: str) -> None:
    sys.stderr.write(f"[fleet {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


def pct(values: list[float], q: float) -> float:
    """The q-quantile, linearly interpolated; NaN for no values."""
    v = sorted(values)
    if not v:
        return math.nan
    k = (len(v) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def wait_loaded(augur: procs.Augur, names: list[str], model: str, timeout: float = 60) -> None:
    """Until augur's probe sees every upstream healthy with the model loaded."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        ups = augur.upstreams()
        ready = [u for u in ups if u.get("name") in names and u.get("healthy")
                 and model in json.dumps(u.get("loaded", u))]
        if len(ready) == len(names):
            return
        last = ups
        time.sleep(0.5)
    raise RuntimeError(f"augur does not see {model} loaded on {names}: {json.dumps(last)[:600]}")


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, int]:
    """A counter's increase by label value, without the values that did not move."""
    keys = sorted(set(after) | set(before))
    return {k: int(after.get(k, 0) - before.get(k, 0)) for k in keys if after.get(k, 0) != before.get(k, 0)}


def run_row(a: argparse.Namespace, env: dict, routing: str, out: Path, tag: str) -> dict:
    cpus = os.cpu_count() or 1
    extra = procs.llama_args(a.slots, a.ctx_per_slot, a.similarity, a.cache_ram)
    ups = [procs.Upstream(n, out, env, extra, i % cpus if a.pin else None) for i, n in enumerate(("a", "b"))]
    augur = None
    try:
        for u in ups:
            u.start()
        for u in ups:
            u.warm()
        policy = {"models": {"gemma3:*": {"routing": routing, "affinity": {"epsilon": a.epsilon}}}}
        augur = procs.Augur(a.augur_bin, ups, out, f"augur-{tag}", policy)
        model = env["AUGUR_MODEL"]
        wait_loaded(augur, [u.name for u in ups], model)
        how0 = procs.metric_values(augur.metrics(), "augur_routing_decisions_total", "how")
        tok0 = {u.name: u.prompt_tokens_total() for u in ups}
        t0 = time.monotonic()
        convs = workload.conversations(augur.url, model, a.convs, a.turns, a.rules, a.lines, a.num_predict,
                                       a.stagger)
        conv_s = time.monotonic() - t0
        how1 = procs.metric_values(augur.metrics(), "augur_routing_decisions_total", "how")
        tok1 = {u.name: u.prompt_tokens_total() for u in ups}

        def sample() -> dict[str, float]:
            return procs.metric_values(augur.metrics(), "augur_upstream_in_flight", "upstream")

        mix, samples = workload.mixed(augur.url, model, a.mixed, a.mixed_concurrency, a.num_predict, sample)
        how2 = procs.metric_values(augur.metrics(), "augur_routing_decisions_total", "how")
        tasks = [t for u in ups for t in procs.read_tasks(u.name, u.llama_log)]
        missed = procs.attribute(convs + mix, tasks)
    finally:
        if augur:
            augur.stop()
        for u in ups:
            u.stop()
    return {"routing": routing, "convs": convs, "mixed": mix, "samples": samples, "conv_s": conv_s,
            "how_conv": delta(how1, how0), "how_mixed": delta(how2, how1), "missed": missed,
            "evaluated_conv": sum(tok1[k] - tok0[k] for k in tok0), "names": [u.name for u in ups]}


def summarize(row: dict, epsilon: float) -> dict:
    convs = row["convs"]
    first = [r for r in convs if r["turn"] == 0]
    later = [r for r in convs if r["turn"] > 0]
    by_conv: dict[int, list[dict]] = {}
    for r in sorted(convs, key=lambda r: (r["conv"], r["turn"])):
        by_conv.setdefault(r["conv"], []).append(r)
    same = moved = 0
    for turns in by_conv.values():
        for prev, cur in zip(turns, turns[1:]):
            if "upstream" in prev and "upstream" in cur:
                same, moved = same + (prev["upstream"] == cur["upstream"]), moved + (prev["upstream"] != cur["upstream"])
    homes = {}
    for turns in by_conv.values():
        seen = {r.get("upstream", "?") for r in turns}
        key = "/".join(sorted(seen))
        homes[key] = homes.get(key, 0) + 1
    ev_later = [r["evaluated"] for r in later if "evaluated" in r]
    misses = [r for r in later if r.get("evaluated", 0) > MISS_TOKENS]
    hits = [r for r in later if 0 <= r.get("evaluated", -1) <= MISS_TOKENS]
    names = row["names"]
    loaded = [s for s in row["samples"] if sum(s.values()) > 0]
    mean = (sum(sum(s.values()) for s in loaded) / len(loaded) / len(names)) if loaded else math.nan
    peaks = {n: int(max((s.get(n, 0) for s in row["samples"]), default=0)) for n in names}
    over = sum(1 for s in loaded
               if max(s.get(n, 0) for n in names) > math.ceil((1 + epsilon) * sum(s.values()) / len(names)))
    served = {n: sum(1 for r in row["mixed"] if r.get("upstream") == n) for n in names}
    return {
        "first_p50": pct([r["ttft"] for r in first], 0.5), "first_p90": pct([r["ttft"] for r in first], 0.9),
        "later_p50": pct([r["ttft"] for r in later], 0.5), "later_p90": pct([r["ttft"] for r in later], 0.9),
        "prompt_later": pct([r["prompt_eval_count"] for r in later], 0.5),
        "eval_later_mean": sum(ev_later) / len(ev_later) if ev_later else math.nan,
        "eval_later_p50": pct(ev_later, 0.5),
        "misses": len(misses), "hits": len(hits),
        "hit_p50": pct([r["ttft"] for r in hits], 0.5), "miss_p50": pct([r["ttft"] for r in misses], 0.5),
        "same": same, "moved": moved, "homes": homes, "conv_s": row["conv_s"],
        "evaluated_conv": row["evaluated_conv"], "how_conv": row["how_conv"], "how_mixed": row["how_mixed"],
        "missed": row["missed"], "turns": len(convs), "mixed_n": len(row["mixed"]),
        "mixed_p50": pct([r["ttft"] for r in row["mixed"]], 0.5),
        "served": served, "peaks": peaks, "mean": mean, "bound": (1 + epsilon) * mean,
        "over": over, "samples": len(loaded),
    }


def ms(x: float) -> str:
    return "–" if math.isnan(x) else f"{x * 1000:,.0f} ms"


def ratio(x: float, y: float) -> str:
    return "–" if math.isnan(x) or math.isnan(y) or y == 0 else f"{x / y:.2f}×"


def fmt_map(m: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in m.items()) or "–"


def table(s: dict[str, dict], a: argparse.Namespace) -> str:
    A, L = s["affinity"], s["least_loaded"]
    rows = [
        ("first turn: TTFT p50", ms(A["first_p50"]), ms(L["first_p50"]), ratio(L["first_p50"], A["first_p50"])),
        ("first turn: TTFT p90", ms(A["first_p90"]), ms(L["first_p90"]), ratio(L["first_p90"], A["first_p90"])),
        ("later turns: TTFT p50", ms(A["later_p50"]), ms(L["later_p50"]), ratio(L["later_p50"], A["later_p50"])),
        ("later turns: TTFT p90", ms(A["later_p90"]), ms(L["later_p90"]), ratio(L["later_p90"], A["later_p90"])),
        ("later turns: prompt tokens (prompt_eval_count, p50)", f"{A['prompt_later']:,.0f}", f"{L['prompt_later']:,.0f}", ""),
        ("later turns: prompt tokens evaluated, mean / p50 (llama-server)",
         f"{A['eval_later_mean']:,.0f} / {A['eval_later_p50']:,.0f}", f"{L['eval_later_mean']:,.0f} / {L['eval_later_p50']:,.0f}",
         ratio(L["eval_later_mean"], A["eval_later_mean"])),
        (f"later turns evaluating more than {MISS_TOKENS} tokens (less than the previous turn cached)",
         f"{A['misses']} of {A['misses'] + A['hits']}", f"{L['misses']} of {L['misses'] + L['hits']}", ""),
        (f"later turns: TTFT p50 of those / of the others", f"{ms(A['miss_p50'])} / {ms(A['hit_p50'])}",
         f"{ms(L['miss_p50'])} / {ms(L['hit_p50'])}", ""),
        ("prompt tokens evaluated in the conversations (both servers)", f"{A['evaluated_conv']:,.0f}",
         f"{L['evaluated_conv']:,.0f}", ratio(L["evaluated_conv"], A["evaluated_conv"])),
        ("later turns on the previous turn's upstream / moved", f"{A['same']} / {A['moved']}", f"{L['same']} / {L['moved']}", ""),
        ("conversations by the upstreams that served them", fmt_map(A["homes"]), fmt_map(L["homes"]), ""),
        ("augur_routing_decisions_total, conversations", fmt_map(A["how_conv"]), fmt_map(L["how_conv"]), ""),
        ("conversation phase, wall time", f"{A['conv_s']:.1f} s", f"{L['conv_s']:.1f} s", ratio(L["conv_s"], A["conv_s"])),
        (f"mixed ({A['mixed_n']} one-turn conversations, {a.mixed_concurrency} at once): TTFT p50",
         ms(A["mixed_p50"]), ms(L["mixed_p50"]), ratio(L["mixed_p50"], A["mixed_p50"])),
        ("mixed: requests served per upstream", fmt_map(A["served"]), fmt_map(L["served"]), ""),
        ("mixed: peak in flight per upstream", fmt_map(A["peaks"]), fmt_map(L["peaks"]), ""),
        (f"mixed: mean in flight per upstream, × (1 + ε = {1 + a.epsilon:g})",
         f"{A['mean']:.2f}, bound {A['bound']:.2f} (ceil {math.ceil(A['bound'])})",
         f"{L['mean']:.2f}, bound {L['bound']:.2f} (ceil {math.ceil(L['bound'])})", ""),
        ("mixed: samples with an upstream over ceil((1 + ε) × the mean of that moment)",
         f"{A['over']} of {A['samples']}", f"{L['over']} of {L['samples']}", ""),
        ("mixed: augur_routing_decisions_total", fmt_map(A["how_mixed"]), fmt_map(L["how_mixed"]), ""),
        ("requests not found in llama-server's log", str(A["missed"]), str(L["missed"]), ""),
    ]
    lines = ["| Measure | affinity | least_loaded | least_loaded / affinity |", "|---|---:|---:|---:|"]
    lines += [f"| {m} | {x} | {y} | {r} |" for m, x, y, r in rows]
    return "\n".join(lines)


def verdict(s: dict[str, dict]) -> str:
    A, L = s["affinity"], s["least_loaded"]
    r = L["later_p50"] / A["later_p50"] if A["later_p50"] else math.nan
    peak_ok = all(v <= A["bound"] for v in A["peaks"].values())
    return (f"Later turns' TTFT p50 least_loaded/affinity {r:.2f}× (target ≥ 3×: {'met' if r >= 3 else 'not met'}). "
            f"Mixed phase under affinity: peaks {fmt_map(A['peaks'])} against (1 + ε) × mean = {A['bound']:.2f} "
            f"({'within' if peak_ok else 'over'}; in flight is a whole number, the ring bounds it by "
            f"ceil((1 + ε) × the load of the moment)); an upstream over that bound in {A['over']} of {A['samples']} samples.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="fits",
                    help="fits: 6 conversations × 6 turns, 6 slots per server; outnumbers: 12 × 4, 6 slots, "
                         "no host-memory prompt cache")
    ap.add_argument("--convs", type=int, help="concurrent conversations (default: the workload's)")
    ap.add_argument("--turns", type=int, help="turns per conversation (default: the workload's)")
    ap.add_argument("--rules", type=int, default=42, help="rules in the shared system prompt (~37 tokens each)")
    ap.add_argument("--lines", type=int, default=8, help="lines of the first message (+2 per conversation)")
    ap.add_argument("--num-predict", type=int, default=16)
    ap.add_argument("--stagger", type=float, default=0.1, help="seconds between the turns of one round")
    ap.add_argument("--mixed", type=int, default=48, help="one-turn conversations in the mixed phase")
    ap.add_argument("--mixed-concurrency", type=int, default=8)
    ap.add_argument("--slots", type=int, help="llama-server slots (-np) per upstream (default: the workload's)")
    ap.add_argument("--ctx-per-slot", type=int, default=4096)
    ap.add_argument("--cache-ram", type=int, help="llama-server --cache-ram in MiB, 0 off "
                    "(default: the workload's; fits leaves llama-server's 8 GiB)")
    ap.add_argument("--similarity", type=float, default=0.9, help="llama-server --slot-prompt-similarity")
    ap.add_argument("--epsilon", type=float, default=0.25)
    ap.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin each llama-server to a CPU")
    ap.add_argument("--augur-bin", type=Path, default=procs.ROOT / "target" / "release" / "augur")
    ap.add_argument("--out", type=Path, help="logs and records (default: a new temporary directory)")
    ap.add_argument("--smoke", action="store_true", help="a small run (under a minute): checks the table is made")
    a = ap.parse_args()
    for key, value in WORKLOADS[a.workload].items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    if a.smoke:
        a.reps, a.convs, a.turns, a.rules, a.lines, a.num_predict = 1, 2, 3, 6, 1, 4
        a.mixed, a.mixed_concurrency, a.slots, a.ctx_per_slot = 6, 3, 2, 2048
    out = a.out or Path(tempfile.mkdtemp(prefix="augur-fleet-"))
    out.mkdir(parents=True, exist_ok=True)
    env = procs.real_upstream_env()
    if not a.augur_bin.is_file():
        raise SystemExit(f"no augur binary at {a.augur_bin}: cargo build --release")
    log(f"logs and records in {out}")
    print(f"#### Affinity vs least-loaded on two real upstreams ({os.cpu_count()} CPUs)\n")
    print(f"Workload `{a.workload}`: {a.convs} conversations × {a.turns} turns in rounds ({a.stagger:g} s apart within a round) under one system prompt ({a.rules} rules), "
          f"num_predict {a.num_predict}; llama-server `{' '.join(procs.llama_args(a.slots, a.ctx_per_slot, a.similarity, a.cache_ram))} -t 1`"
          f"{', each pinned to a CPU' if a.pin else ''}; ε = {a.epsilon:g}.\n", flush=True)
    results = []
    for rep in range(a.reps):
        order = ROUTINGS if rep % 2 == 0 else ROUTINGS[::-1]
        rows = {}
        for routing in order:
            log(f"repetition {rep + 1}/{a.reps}: {routing}")
            row = run_row(a, env, routing, out, f"{rep + 1}-{routing}")
            (out / f"records-{rep + 1}-{routing}.json").write_text(json.dumps(
                {k: row[k] for k in ("convs", "mixed", "samples", "how_conv", "how_mixed")}, indent=1))
            rows[routing] = summarize(row, a.epsilon)
        results.append(rows)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"Repetition {rep + 1} (rows in the order {', '.join(order)}; load average {load} after it):\n")
        print(table(rows, a))
        print(f"\n{verdict(rows)}\n", flush=True)
    if len(results) > 1:
        print("| Repetition | later turns TTFT p50, affinity | least_loaded | ratio | p90, affinity | least_loaded "
              "| ratio | tokens evaluated per later turn, affinity / least_loaded | spills | mixed: peak in flight, "
              "affinity / least_loaded, against ceil((1 + ε) × mean) |")
        print("|---|---:|---:|---:|---:|---:|---:|---|---:|---|")
        for i, rows in enumerate(results):
            A, L = rows["affinity"], rows["least_loaded"]
            print(f"| {i + 1} | {ms(A['later_p50'])} | {ms(L['later_p50'])} | {ratio(L['later_p50'], A['later_p50'])} "
                  f"| {ms(A['later_p90'])} | {ms(L['later_p90'])} | {ratio(L['later_p90'], A['later_p90'])} "
                  f"| {A['eval_later_mean']:,.0f} / {L['eval_later_mean']:,.0f} "
                  f"| {A['how_conv'].get('spill', 0)} | {fmt_map(A['peaks'])} / {fmt_map(L['peaks'])}, "
                  f"{math.ceil(A['bound'])} / {math.ceil(L['bound'])} |")
    sys.stdout.flush()
    if a.smoke:
        want = a.convs * a.turns
        bad = [f"{r}: {s['turns']} turns of {want}, {s['missed']} not found in llama-server's log"
               for rows in results for r, s in rows.items() if s["turns"] != want or s["missed"]]
        if bad:
            log("smoke: " + "; ".join(bad))
            return 1
        log("smoke: the table is complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
