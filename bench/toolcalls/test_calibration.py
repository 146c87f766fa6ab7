"""The calibration analysis (calibration.py) on recorded rows made up here:
the statistics, the features read from a done chunk, and the sweep's
arithmetic. No model, no augur."""

import math

import pytest

import calibration as cal
import cases as caselib


def entry(id_, right, conf=None, calls=(), status=200, truncated=False, exact=None, right_count=None,
          upstream_calls=1.0, latency=2.0, eval_count=100, answer_calls=None, category="one_call"):
    """A recorded answer: its verdict, and augur's confidence as the done chunk says it."""
    scored = [{"name": c.get("name", "f"), "min": c["min"], "mean": c.get("mean", c["min"]),
               "unsure_tokens": c.get("unsure", 0), "tokens": c.get("tokens", 1)} for c in calls]
    return {
        "id": id_, "status": status, "malformed": None, "eval_count": eval_count,
        "calls": answer_calls if answer_calls is not None else [{"name": c["name"], "arguments": {}}
                                                               for c in scored],
        "confidence": None if conf is None else {"answer": conf, "calls": scored, "below": None},
        "score": {"id": id_, "category": category, "right_tools": right,
                  "right_count": right if right_count is None else right_count,
                  "exact_args": right if exact is None else exact, "truncated": truncated,
                  "upstream_calls": upstream_calls, "latency_s": latency},
    }


# --- statistics -------------------------------------------------------------------


def test_auroc_counts_pairs_and_ties():
    assert cal.auroc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    assert cal.auroc([0.8, 0.9, 0.1, 0.2], [False, False, True, True]) == 0.0
    # pos 0.35 beats 0.1, loses to 0.4; pos 0.8 beats both: 3 of 4 pairs.
    assert cal.auroc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == 0.75
    assert cal.auroc([0.5, 0.5, 0.5], [True, False, False]) == 0.5
    # One tie among four pairs: 0.6 vs 0.6 counts half.
    assert cal.auroc([0.6, 0.9, 0.6, 0.1], [True, True, False, False]) == pytest.approx(3.5 / 4)
    assert cal.auroc([0.1, 0.2], [True, True]) is None


def test_bootstrap_interval_holds_the_estimate_and_is_repeatable():
    scores = [i / 40 for i in range(40)]
    labels = [i % 3 != 0 and i > 10 for i in range(40)]
    point = cal.auroc(scores, labels)
    lo, hi = cal.bootstrap_ci(scores, labels, n=300)
    assert lo <= point <= hi and lo < hi
    assert cal.bootstrap_ci(scores, labels, n=300) == (lo, hi)
    assert cal.bootstrap_ci([0.1, 0.2], [True, True], n=50) is None


def test_a_feature_that_only_tracks_length_scores_chance_within_a_stratum():
    # Long answers (stratum 1) are wrong more often and have more unsure
    # tokens, but within a stratum unsure tokens say nothing.
    unsure = [-3, -3, -3, -3, 0, 0, 0, 0]
    right = [False, False, False, True, True, True, True, False]
    strata = [1, 1, 1, 1, 0, 0, 0, 0]
    assert cal.auroc(unsure, right) > 0.7
    assert cal.stratified_auroc(unsure, right, strata) == 0.5


def test_terciles():
    assert cal.terciles([1, 2, 3, 4, 5, 6]) == [0, 0, 1, 1, 2, 2]


# --- features ---------------------------------------------------------------------


def test_answer_features_join_the_calls():
    e = entry("q", True, conf=0.4, calls=[
        {"name": "f", "min": 0.4, "mean": 0.5, "unsure": 2, "tokens": 3},
        {"name": "g", "min": 0.8, "mean": 0.9, "unsure": 0, "tokens": 1}])
    f = cal.answer_features(e)
    assert f["min"] == 0.4 and f["weakest_mean"] == 0.5
    assert f["mean"] == pytest.approx(math.exp((3 * math.log(0.5) + math.log(0.9)) / 4))
    assert f["unsure_tokens"] == 2 and f["tokens"] == 4 and f["unsure_share"] == 0.5
    assert f["calls"] == 2 and f["eval_count"] == 100


@pytest.mark.parametrize("e", [
    entry("plain", True, conf=0.9),                                   # a plain answer: no calls
    entry("unknown", True, conf=None),                                # not scored
    entry("422", False, conf=0.9, calls=[{"name": "f", "min": 0.9}], status=422),
    entry("cut", False, conf=0.9, calls=[{"name": "f", "min": 0.9}], truncated=True),
])
def test_answers_without_scored_calls_have_no_features(e):
    assert cal.answer_features(e) is None


def test_calls_line_up_with_their_scores_or_are_left_out():
    case = {"id": "w", "category": "parallel", "tools": [caselib.load_library()["get_weather"]],
            "messages": [{"role": "user", "content": "Weather in Lyon and Paris?"}],
            "expect": {"calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}},
                                 {"name": "get_weather", "arguments": {"city": "Paris"}}]}}
    calls = [{"name": "get_weather", "arguments": {"city": "Lyon"}},
             {"name": "get_weather", "arguments": {"city": "Rome"}}]
    e = entry("w", False, conf=0.2, answer_calls=calls, calls=[
        {"name": "get_weather", "min": 0.9, "tokens": 2}, {"name": "get_weather", "min": 0.2, "unsure": 1}])
    rows = cal.call_rows(e, case)
    assert [(r["min"], r["right"]) for r in rows] == [(0.9, True), (0.2, False)]
    assert rows[1]["unsure_share"] == 1.0
    # One score for two calls: they cannot be paired.
    e["confidence"]["calls"].pop()
    assert cal.call_rows(e, case) == []


# --- the sweep -------------------------------------------------------------------


@pytest.fixture
def rows():
    primary = {e["id"]: e for e in [
        entry("q1", True, conf=0.9, calls=[{"name": "f", "min": 0.9}], latency=2.0),
        entry("q2", False, conf=0.2, calls=[{"name": "f", "min": 0.2, "unsure": 2}], latency=2.0),
        entry("q3", False, status=422, upstream_calls=2.0, latency=4.0),
        entry("q4", True, conf=0.4, calls=[{"name": "f", "min": 0.4, "unsure": 1}], latency=2.0),
        entry("q5", True, conf=None, latency=2.0),  # a 200 whose confidence is unknown
    ]}
    fallback = {e["id"]: e for e in [
        entry("q1", False, latency=3.0), entry("q2", True, latency=3.0), entry("q3", True, latency=3.0),
        entry("q4", True, exact=False, latency=3.0), entry("q5", False, latency=3.0),
    ]}
    return primary, fallback


def test_a_threshold_keeps_the_sure_answers_and_escalates_the_rest(rows):
    r = cal.sweep_row(*rows, cal.below(0.5))
    # q2 and q4 below 0.5, q3 failed: escalated; q1 sure and q5 unknown: kept.
    assert (r["n"], r["kept"], r["escalated"]) == (5, 2, 3)
    assert r["kept_pct"] == 40.0 and r["right_kept"] == 100.0
    assert r["right_escalated"] == 100.0 and r["primary_right_escalated"] == 1  # q4
    assert r["right"] == 100.0 and r["exact"] == 80.0 and r["ceiling"] == 100.0
    # Primary calls 1+1+2+1+1, plus the fallback's 1 on each escalated answer.
    assert r["calls"] == pytest.approx((6 + 3) / 5)
    assert r["latency"] == pytest.approx((12 + 9) / 5)


def test_without_a_threshold_only_failures_go_to_the_fallback(rows):
    label, r = cal.sweep(*rows, thresholds=[0.5])[0]
    assert label == "none (failures only)"
    assert (r["kept"], r["escalated"]) == (4, 1)
    assert r["right"] == 80.0  # q1, q3 (fallback), q4, q5; q2 kept wrong
    label, r = cal.sweep(*rows, thresholds=[0.5])[-1]
    assert label == "every answer" and r["kept"] == 0 and r["right"] == 60.0


def test_unsure_tokens_as_the_rule(rows):
    r = cal.sweep_row(*rows, cal.unsure_at_least(2))
    assert r["escalated"] == 2  # q2 (2 unsure) and q3 (failed)


def test_the_recommended_threshold_is_the_cheapest_near_the_best():
    def r(right, calls):
        return {"right": right, "calls": calls}
    rows = [("none (failures only)", r(10, 1.0)), ("0.10", r(50, 1.1)), ("0.20", r(59, 1.3)),
            ("0.30", r(60, 1.6)), ("every answer", r(70, 2.0))]
    assert cal.best_threshold(rows)[0] == "0.20"
    assert cal.best_threshold(rows, within=0.5)[0] == "0.30"


def test_reliability_bins_count_their_answers():
    rows = [{"min": m, "right_tools": r, "exact_args": r, "unsure_tokens": u}
            for m, r, u in [(0.05, False, 3), (0.08, True, 2), (0.95, True, 0), (1.0, True, 0)]]
    table = cal.reliability_table(rows)
    assert "| 0.0–0.1 | 2 | 0.07 | 50% | 50% |" in table
    assert "| 0.9–1.0 | 2 | 0.97 | 100% | 100% |" in table
    assert "0.5–0.6" not in table
    unsure = cal.unsure_table(rows, top=3)
    assert "| 0 | 2 | 100% | 100% |" in unsure and "| 3+ | 1 | 0% | 0% |" in unsure


def test_the_report_needs_the_primary_row_and_sweeps_with_the_fallback(rows):
    primary, fallback = rows
    details = {"rows": {"augur-conf": {"label": "P", "cases": list(primary.values())},
                        "augur-small": {"label": "F", "cases": list(fallback.values())}}}
    text = cal.report(details, {})
    assert text.startswith("### Calibration: P (5 questions)")
    assert "3 answers made calls and were scored (2 with the right tools)" in text
    assert "#### Sweep: primary P, fallback F" in text
    assert "| 0.50 | 40% (2) | 100% | 100% | 1 | 100% | 80% | 100% | 1.80 | 4.2 s |" in text
    assert cal.report({"rows": {"augur": details["rows"]["augur-small"]}}, {}) == ""
