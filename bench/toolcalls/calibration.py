"""How well augur's confidence tells a right answer from a wrong one, and
what a threshold on it would buy: read from a run's recorded rows, offline.

The calibration row (`augur-conf`: augur's default policies with
`confidence: {threshold: 0.5}`, requests streamed) records, per question,
the signals of the done chunk (`augur_confidence`, and per call `min`,
`mean`, `unsure_tokens`, `tokens`) beside the checker's verdict. From
those rows:

- **AUROC** of each feature for "this answer is right" (right tools, and
  exact arguments), over the answers that made calls and were scored:
  the chance that a right answer scores better than a wrong one (0.5 is
  chance; for features where fewer is better, fewer counts as better).
  With a 95% bootstrap interval, and per call where the done chunk's
  calls line up with the answer's.
- **Length**: whether `unsure_tokens` only measures length: the AUROC of
  `tokens` and of the answer's length alone, of `unsure_tokens / tokens`,
  and of `unsure_tokens` compared only between answers of similar length.
- **Failure kinds**: each feature's AUROC against wrong answers with the
  wrong number of calls, and against those with the right number.
- **Reliability**: answers binned by confidence (and by unsure tokens),
  with the share right in each bin.
- **Sweep**: for thresholds 0.05 to 0.95, a deployment where the primary's
  answer is kept unless it failed (an error, a 422, a cut answer: the
  fallback's default `on`) or its confidence is below the threshold, and
  the fallback row's answer to the same question is taken otherwise:
  share kept, right tools among kept / escalated / overall, upstream
  calls and latency per question (the fallback's added to the
  primary's). Nothing is run again per threshold.

    python bench/toolcalls/calibration.py RESULTS_JSON [--primary augur-conf] [--fallback augur-small]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from pathlib import Path
from typing import Any, Callable

import cases as caselib
import checker

PRIMARY_ROW = "augur-conf"
FALLBACK_ROW = "augur-small"
THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]
BOOTSTRAP = 1000

# Answer features: (key, label, +1 when a higher value should mean right, -1 when lower).
FEATURES = [
    ("min", "min (answer confidence: weakest token of the weakest call)", 1),
    ("mean", "mean (geometric mean of all value tokens)", 1),
    ("weakest_mean", "weakest call's mean", 1),
    ("unsure_tokens", "unsure_tokens (value tokens below p = 0.5)", -1),
    ("unsure_share", "unsure_tokens / tokens", -1),
    ("tokens", "tokens (value tokens scored)", -1),
    ("eval_count", "answer length (tokens generated)", -1),
    ("calls", "number of calls", -1),
]
CALL_FEATURES = [("min", 1), ("mean", 1), ("unsure_tokens", -1), ("unsure_share", -1), ("tokens", -1)]


# --- statistics -------------------------------------------------------------------


def auroc(scores: list[float], labels: list[bool]) -> float | None:
    """The chance a positive scores above a negative (ties count half);
    None without both."""
    pos = sum(1 for y in labels if y)
    neg = len(labels) - pos
    if not pos or not neg:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    rank_sum = sum(r for r, y in zip(ranks, labels) if y)
    return (rank_sum - pos * (pos + 1) / 2) / (pos * neg)


def bootstrap_ci(scores: list[float], labels: list[bool], n: int = BOOTSTRAP,
                 seed: int = 0) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of the AUROC over `n` resamples
    (resamples without both classes left out)."""
    rng = random.Random(seed)
    size = len(scores)
    values = []
    for _ in range(n):
        pick = [rng.randrange(size) for _ in range(size)]
        a = auroc([scores[i] for i in pick], [labels[i] for i in pick])
        if a is not None:
            values.append(a)
    if len(values) < n // 2:
        return None
    values.sort()
    return values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]


def stratified_auroc(scores: list[float], labels: list[bool], strata: list[Any]) -> float | None:
    """AUROC counting only pairs in the same stratum."""
    concordant = pairs = 0.0
    for s in set(strata):
        idx = [i for i, t in enumerate(strata) if t == s]
        pos = [scores[i] for i in idx if labels[i]]
        neg = [scores[i] for i in idx if not labels[i]]
        for p in pos:
            for q in neg:
                concordant += 1.0 if p > q else 0.5 if p == q else 0.0
        pairs += len(pos) * len(neg)
    return concordant / pairs if pairs else None


def terciles(values: list[float]) -> list[int]:
    """Each value's third (0, 1, 2) of the sorted values."""
    ranked = sorted(values)
    cuts = [ranked[len(ranked) // 3], ranked[2 * len(ranked) // 3]] if ranked else [0, 0]
    return [0 if v < cuts[0] else 1 if v < cuts[1] else 2 for v in values]


# --- features ---------------------------------------------------------------------


def answered(entry: dict) -> bool:
    """The answer reached the client whole: a 200, readable, not cut."""
    s = entry["score"]
    return entry.get("status") == 200 and not entry.get("malformed") and not s["truncated"]


def answer_features(entry: dict) -> dict | None:
    """The features of one recorded answer scored with calls; None when
    augur did not score it or it made no call."""
    conf = entry.get("confidence") or {}
    calls = conf.get("calls") or []
    if conf.get("answer") is None or not calls or not answered(entry):
        return None
    tokens = sum(c["tokens"] for c in calls)
    unsure = sum(c["unsure_tokens"] for c in calls)
    log_mean = sum(c["tokens"] * math.log(max(c["mean"], 1e-9)) for c in calls)
    return {
        "min": conf["answer"],
        "mean": math.exp(log_mean / tokens) if tokens else None,
        "weakest_mean": min(c["mean"] for c in calls),
        "unsure_tokens": unsure,
        "unsure_share": unsure / tokens if tokens else None,
        "tokens": tokens,
        "eval_count": entry.get("eval_count"),
        "calls": len(entry.get("calls") or []),
    }


def call_rows(entry: dict, case: dict) -> list[dict]:
    """Per call: its signals and whether it is one of the expected calls
    (exactly); only where the scored calls line up with the answer's."""
    conf = entry.get("confidence") or {}
    scored = conf.get("calls") or []
    calls = entry.get("calls") or []
    if not answered(entry) or [c.get("name") for c in scored] != [c.get("name") for c in calls]:
        return []
    params = checker.tool_params(case["tools"])
    want = case["expect"].get("calls") or []
    out = []
    for s, call in zip(scored, calls):
        right = any(checker.call_matches(w, call, params.get(w["name"])) for w in want)
        out.append({"min": s["min"], "mean": s["mean"], "unsure_tokens": s["unsure_tokens"],
                    "tokens": s["tokens"],
                    "unsure_share": s["unsure_tokens"] / s["tokens"] if s["tokens"] else 0.0,
                    "right": right})
    return out


def feature_auroc(rows: list[dict], key: str, direction: int, label: str,
                  ci: bool = True) -> dict:
    picked = [r for r in rows if r.get(key) is not None]
    scores = [direction * r[key] for r in picked]
    labels = [bool(r[label]) for r in picked]
    out = {"n": len(picked), "right": sum(labels), "auroc": auroc(scores, labels)}
    if ci and out["auroc"] is not None:
        out["ci"] = bootstrap_ci(scores, labels)
    return out


# --- the sweep -------------------------------------------------------------------


def escalates(entry: dict, rule: Callable[[dict], bool]) -> bool:
    """The primary's answer goes to the fallback: it failed (augur's
    fallback `on` default: invalid, truncated, upstream error), or `rule`
    says so."""
    return not answered(entry) or rule(entry)


def _known(entry: dict) -> dict | None:
    """The answer's confidence, when augur knew it (an answer of unknown
    confidence is never below a threshold)."""
    conf = entry.get("confidence") or {}
    return conf if conf.get("answer") is not None else None


def sweep_row(primary: dict[str, dict], fallback: dict[str, dict], rule: Callable[[dict], bool]) -> dict:
    """One deployment over the questions both rows answered."""
    ids = [i for i in primary if i in fallback]
    kept = esc = kept_right = esc_right = esc_primary_right = right = exact = ceiling = 0
    calls = latency = 0.0
    for i in ids:
        p, f = primary[i], fallback[i]
        ps, fs = p["score"], f["score"]
        calls += ps["upstream_calls"] or 0
        latency += ps["latency_s"] or 0
        if escalates(p, rule):
            esc += 1
            esc_right += fs["right_tools"]
            esc_primary_right += ps["right_tools"]
            right += fs["right_tools"]
            exact += fs["exact_args"]
            ceiling += 1
            calls += fs["upstream_calls"] or 0
            latency += fs["latency_s"] or 0
        else:
            kept += 1
            kept_right += ps["right_tools"]
            right += ps["right_tools"]
            exact += ps["exact_args"]
            ceiling += ps["right_tools"]
    n = len(ids)

    def pct(a: int, b: int) -> float | None:
        return 100.0 * a / b if b else None
    return {"n": n, "kept": kept, "escalated": esc, "kept_pct": pct(kept, n),
            "right_kept": pct(kept_right, kept), "right_escalated": pct(esc_right, esc),
            "primary_right_escalated": esc_primary_right,
            "right": pct(right, n), "exact": pct(exact, n), "ceiling": pct(ceiling, n),
            "calls": calls / n if n else None, "latency": latency / n if n else None}


def below(threshold: float) -> Callable[[dict], bool]:
    """augur's rule: the answer's confidence is below `threshold`."""
    def rule(e: dict) -> bool:
        conf = _known(e)
        return conf is not None and conf["answer"] < threshold
    return rule


def unsure_at_least(k: int) -> Callable[[dict], bool]:
    """At least `k` unsure tokens among the answer's calls."""
    def rule(e: dict) -> bool:
        conf = _known(e)
        return conf is not None and sum(c["unsure_tokens"] for c in conf.get("calls") or []) >= k
    return rule


def sweep(primary: dict[str, dict], fallback: dict[str, dict],
          thresholds: list[float] = THRESHOLDS) -> list[tuple[str, dict]]:
    """The deployment at each threshold, framed by: failures only
    escalated (no threshold), and every answer escalated."""
    rows = [("none (failures only)", sweep_row(primary, fallback, lambda e: False))]
    rows += [(f"{t:.2f}", sweep_row(primary, fallback, below(t))) for t in thresholds]
    rows.append(("every answer", sweep_row(primary, fallback, lambda e: True)))
    return rows


def best_threshold(rows: list[tuple[str, dict]], within: float = 2.0) -> tuple[str, dict]:
    """The cheapest threshold (fewest upstream calls per question) whose
    right tools overall is within `within` points of the best threshold's."""
    thresholds = [(k, r) for k, r in rows if k[0].isdigit()]
    top = max(r["right"] for _, r in thresholds)
    near = [(k, r) for k, r in thresholds if r["right"] >= top - within]
    return min(near, key=lambda kr: (kr[1]["calls"], -kr[1]["right"]))


# --- the report ------------------------------------------------------------------


def _f(v: float | None, fmt: str = "{:.2f}") -> str:
    return "–" if v is None else fmt.format(v)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f}%"


def _auroc_cell(a: dict) -> str:
    if a["auroc"] is None:
        return "–"
    ci = a.get("ci")
    return f"{a['auroc']:.2f}" + (f" ({ci[0]:.2f}–{ci[1]:.2f})" if ci else "")


def auroc_table(rows: list[dict]) -> str:
    need = [r for r in rows if r["needs_calls"]]
    out = [f"| feature (better when) | right tools ({len(rows)} answers) | exact args ({len(rows)}) "
           f"| right tools, questions that need calls ({len(need)}) |", "|---|---:|---:|---:|"]
    for key, label, direction in FEATURES:
        rt = feature_auroc(rows, key, direction, "right_tools")
        ex = feature_auroc(rows, key, direction, "exact_args")
        nc = feature_auroc(need, key, direction, "right_tools")
        when = "higher" if direction > 0 else "lower"
        out.append(f"| {label} ({when}) | {_auroc_cell(rt)} | {_auroc_cell(ex)} | {_auroc_cell(nc)} |")
    return "\n".join(out)


def length_lines(rows: list[dict]) -> list[str]:
    picked = [r for r in rows if r.get("unsure_tokens") is not None and r.get("tokens")]
    labels = [r["right_tools"] for r in picked]
    unsure = [-r["unsure_tokens"] for r in picked]
    strata = terciles([r["tokens"] for r in picked])
    by_calls = [r["calls"] for r in picked]
    return [
        f"- unsure_tokens compared only between answers in the same third of value-token "
        f"counts: AUROC {_f(stratified_auroc(unsure, labels, strata))} "
        f"(all pairs: {_f(auroc(unsure, labels))});",
        f"- compared only between answers with the same number of calls: AUROC "
        f"{_f(stratified_auroc(unsure, labels, by_calls))}.",
    ]


def failure_table(rows: list[dict]) -> str:
    right = [r for r in rows if r["right_tools"]]
    count = [r for r in rows if not r["right_tools"] and not r["right_count"]]
    other = [r for r in rows if not r["right_tools"] and r["right_count"]]
    out = [f"| feature | right ({len(right)}) vs wrong number of calls ({len(count)}) "
           f"| right vs right number, wrong tools ({len(other)}) |", "|---|---:|---:|"]
    for key, label, direction in FEATURES[:6]:
        a = feature_auroc(right + count, key, direction, "right_tools", ci=False)
        b = feature_auroc(right + other, key, direction, "right_tools", ci=False)
        out.append(f"| {key} | {_f(a['auroc'])} | {_f(b['auroc'])} |")
    return "\n".join(out)


def reliability_table(rows: list[dict], bins: int = 10) -> str:
    out = ["| confidence (min) | answers | mean confidence | right tools | exact args |",
           "|---|---:|---:|---:|---:|"]
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [r for r in rows if lo <= r["min"] < hi or (b == bins - 1 and r["min"] == 1.0)]
        if not inside:
            continue
        n = len(inside)
        mean = sum(r["min"] for r in inside) / n
        rt = 100.0 * sum(r["right_tools"] for r in inside) / n
        ex = 100.0 * sum(r["exact_args"] for r in inside) / n
        out.append(f"| {lo:.1f}–{hi:.1f} | {n} | {mean:.2f} | {rt:.0f}% | {ex:.0f}% |")
    return "\n".join(out)


def unsure_table(rows: list[dict], top: int = 4) -> str:
    out = ["| unsure tokens | answers | right tools | exact args |", "|---|---:|---:|---:|"]
    for k in range(top + 1):
        inside = [r for r in rows if (r["unsure_tokens"] == k if k < top else r["unsure_tokens"] >= top)]
        if not inside:
            continue
        n = len(inside)
        rt = 100.0 * sum(r["right_tools"] for r in inside) / n
        ex = 100.0 * sum(r["exact_args"] for r in inside) / n
        out.append(f"| {k if k < top else f'{top}+'} | {n} | {rt:.0f}% | {ex:.0f}% |")
    return "\n".join(out)


SWEEP_HEADER = ("| escalated when | kept by the primary | right tools among kept | right tools among "
                "escalated (fallback) | escalated that the primary had right | right tools overall "
                "| exact args overall | overall, if the fallback were always right "
                "| upstream calls / question | latency / question |\n"
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def sweep_line(label: str, r: dict) -> str:
    return (f"| {label} | {_pct(r['kept_pct'])} ({r['kept']}) | {_pct(r['right_kept'])} "
            f"| {_pct(r['right_escalated'])} | {r['primary_right_escalated']} | {_pct(r['right'])} "
            f"| {_pct(r['exact'])} | {_pct(r['ceiling'])} | {_f(r['calls'])} | {_f(r['latency'], '{:.1f} s')} |")


def by_id(details: dict, row: str) -> dict[str, dict]:
    return {e["id"]: e for e in details["rows"][row]["cases"]}


def scored_rows(entries: dict[str, dict], cases_by_id: dict[str, dict]) -> list[dict]:
    """The features and verdict of each answer scored with calls
    (`needs_calls`: its question expects calls; taken as so when the case
    is unknown)."""
    out = []
    for e in entries.values():
        f = answer_features(e)
        if f is not None:
            s = e["score"]
            case = cases_by_id.get(e["id"])
            out.append({**f, "id": e["id"], "category": s["category"], "right_tools": s["right_tools"],
                        "right_count": s["right_count"], "exact_args": s["exact_args"],
                        "needs_calls": case is None or "calls" in case["expect"]})
    return out


def report(details: dict, cases_by_id: dict[str, dict], primary: str = PRIMARY_ROW,
           fallback: str = FALLBACK_ROW) -> str:
    """The calibration tables of a run's `primary` row, and the sweep
    against its `fallback` row when the run has one."""
    if primary not in details["rows"]:
        return ""
    entries = by_id(details, primary)
    rows = scored_rows(entries, cases_by_id)
    n = len(entries)
    no_conf = sum(1 for e in entries.values() if (e.get("confidence") or {}).get("answer") is None)
    plain = sum(1 for e in entries.values()
                if (e.get("confidence") or {}).get("answer") is not None and not (e["confidence"].get("calls")))
    right = sum(r["right_tools"] for r in rows)
    out = [f"### Calibration: {details['rows'][primary]['label']} ({n} questions)", "",
           f"{len(rows)} answers made calls and were scored ({right} with the right tools); "
           f"{plain} were plain answers (scored by their words, not below), {no_conf} had no "
           f"confidence (an error, a 422, or no probabilities).", "",
           "#### AUROC per feature, per answer (95% bootstrap interval)", "", auroc_table(rows), ""]
    out += ["Is unsure_tokens only length?", ""] + length_lines(rows) + [""]
    calls = [c for e in entries.values() if e["id"] in cases_by_id
             for c in call_rows(e, cases_by_id[e["id"]])]
    out += [f"#### AUROC per call ({len(calls)} calls, {sum(c['right'] for c in calls)} exactly "
            f"as expected)", "", "| feature | AUROC (95% CI) |", "|---|---:|"]
    for key, direction in CALL_FEATURES:
        out.append(f"| {key} | {_auroc_cell(feature_auroc(calls, key, direction, 'right'))} |")
    out += ["", "#### Failure kinds (AUROC, right tools vs each kind of wrong answer)", "",
            failure_table(rows), "", "#### Reliability", "", reliability_table(rows), "",
            unsure_table(rows), ""]
    if fallback in details["rows"]:
        p, f = entries, by_id(details, fallback)
        rows_sweep = sweep(p, f)
        label = details["rows"][fallback]["label"]
        out += [f"#### Sweep: primary {details['rows'][primary]['label']}, fallback {label}", "",
                SWEEP_HEADER] + [sweep_line(k, r) for k, r in rows_sweep] + [""]
        out += ["Escalated on unsure tokens instead (not a policy augur has):", "", SWEEP_HEADER]
        out += [sweep_line(f"unsure_tokens ≥ {k}", sweep_row(p, f, unsure_at_least(k))) for k in (1, 2, 3, 4)]
        k, r = best_threshold(rows_sweep)
        out += ["", f"Cheapest threshold within 2 points of the best right tools overall: {k} "
                f"({_pct(r['right'])} right tools, {_f(r['calls'])} upstream calls / question).", ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench/toolcalls/calibration.py", description=__doc__.split("\n\n")[0])
    p.add_argument("results", type=Path)
    p.add_argument("--primary", default=PRIMARY_ROW)
    p.add_argument("--fallback", default=FALLBACK_ROW)
    p.add_argument("--cases-file", type=Path, action="append")
    args = p.parse_args(argv)
    details = json.loads(args.results.read_text())
    if args.primary not in details["rows"]:
        raise SystemExit(f"{args.results} has no row {args.primary!r}: run --rows {args.primary},{args.fallback}")
    cases_by_id = {c["id"]: c for c in caselib.load(args.cases_file)}
    print(report(details, cases_by_id, args.primary, args.fallback))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
