"""Scoring one answer against a case's expected outcome, and the tables.

An *outcome* is what a row returned for one case, already reduced to plain
data (see `runner.py`):

    {"status": 200 | 422 | ... | None,  # None: no HTTP answer (timeout, refused)
     "calls": [{"name": str, "arguments": <any>}],
     "content": str,                     # the plain answer, if any
     "malformed": str | None,            # the row could not read the model's reply
     "error": str | None,                # error text of a non-200 answer or exception
     "done_reason": str | None,
     "done": bool | None,                # false: the upstream ended without its done
                                         # chunk (Ollama's cut of a repeated token)
     "upstream_calls": float | None,     # model calls spent on the question
     "latency_s": float}

A case's `expect` is either {"calls": [...]} or {"answer": true}. Each
expected call is {"name", "arguments", "optional"?}: `arguments` must all be
present and match; keys in `optional` may be present and must then match;
no other key may be present. A value is a literal or a matcher:
{"$any": true}, {"$one_of": [v, ...]}, {"$contains": "text"} (case- and
whitespace-insensitive substring), {"$unordered": [v, ...]} (an array in any
order).

Normalized when comparing: 3 == 3.0 (but true != 1), whitespace in strings
(trimmed, runs collapsed), the case of strings whose schema has an `enum`.
Calls are compared as a multiset: order never matters.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import permutations
from typing import Any

import schema_check

CATEGORIES = ("one_call", "pick_one", "parallel", "no_call", "after_result", "awkward_schema", "multilingual")

# --- values --------------------------------------------------------------------


def norm_text(s: str) -> str:
    return " ".join(s.split())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_matcher(v: Any) -> bool:
    return isinstance(v, dict) and len(v) == 1 and next(iter(v)).startswith("$")


def _prop(schema: Any, key: str) -> dict:
    """The sub-schema of property `key` ({} when unknown)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict) and isinstance(props.get(key), dict):
        return props[key]
    return {}


def _items(schema: Any) -> dict:
    """The sub-schema of an array's items ({} when unknown)."""
    items = schema.get("items") if isinstance(schema, dict) else None
    return items if isinstance(items, dict) else {}


def value_matches(expected: Any, actual: Any, schema: Any = None) -> bool:
    """`actual` matches `expected` (a literal or a matcher), under `schema`."""
    schema = schema if isinstance(schema, dict) else {}
    if _is_matcher(expected):
        op, arg = next(iter(expected.items()))
        if op == "$any":
            return True
        if op == "$one_of":
            return any(value_matches(o, actual, schema) for o in arg)
        if op == "$contains":
            return isinstance(actual, str) and norm_text(arg).casefold() in norm_text(actual).casefold()
        if op == "$unordered":
            if not isinstance(actual, list) or len(actual) != len(arg):
                return False
            items = _items(schema)
            return _perfect_matching(arg, actual, lambda e, a: value_matches(e, a, items))
        raise ValueError(f"unknown matcher {op}")
    if expected is None or isinstance(expected, bool):
        return schema_check.json_equal(expected, actual)
    if _is_number(expected):
        return _is_number(actual) and float(expected) == float(actual)
    if isinstance(expected, str):
        if not isinstance(actual, str):
            return False
        e, a = norm_text(expected), norm_text(actual)
        if "enum" in schema:
            return e.casefold() == a.casefold()
        return e == a
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and expected.keys() == actual.keys()
                and all(value_matches(expected[k], actual[k], _prop(schema, k)) for k in expected))
    if isinstance(expected, list):
        items = _items(schema)
        return (isinstance(actual, list) and len(expected) == len(actual)
                and all(value_matches(e, a, items) for e, a in zip(expected, actual)))
    return expected == actual


def _perfect_matching(expected: list, actual: list, ok) -> bool:
    """Each expected item paired with a distinct actual item it matches."""
    if len(expected) != len(actual):
        return False
    if len(expected) <= 6:
        return any(all(ok(e, actual[i]) for e, i in zip(expected, perm))
                   for perm in permutations(range(len(actual))))
    used: set[int] = set()  # greedy beyond 6 items (not used by the cases)
    for e in expected:
        hit = next((i for i, a in enumerate(actual) if i not in used and ok(e, a)), None)
        if hit is None:
            return False
        used.add(hit)
    return True


def call_matches(expected: dict, actual: dict, params: Any) -> bool:
    """One call: same tool name, the required arguments, optional ones allowed."""
    if actual.get("name") != expected["name"]:
        return False
    args = actual.get("arguments")
    if not isinstance(args, dict):
        return False
    want = expected.get("arguments") or {}
    optional = expected.get("optional") or {}
    for key, value in args.items():
        if key in want:
            if not value_matches(want[key], value, _prop(params, key)):
                return False
        elif key in optional:
            if not value_matches(optional[key], value, _prop(params, key)):
                return False
        else:
            return False
    return all(key in args for key in want)


# --- flags ---------------------------------------------------------------------

# Values a model copies from an instruction or a schema instead of the user's words.
_PLACEHOLDER_WORDS = {"string", "example", "placeholder", "...", "…", "value", "null", "none",
                      "number", "integer", "boolean", "object", "array", "str", "int", "float",
                      "<tool name>", "tool name", "your answer", "<your answer>"}
_PLACEHOLDER_RES = [
    re.compile(r"^<[^<>]*>?$"),                       # <city>, <city
    re.compile(r"\{\{.*?\}\}|\$\{.*?\}|\{…\}|\{\.\.\.\}"),  # {{city}}, ${city}, {…}
    re.compile(r"<(start|end)_of_turn>|<bos>|<eos>|<pad>|\[INST\]|<\|[a-z_]+\|>", re.I),
]


def is_placeholder(s: str) -> bool:
    t = norm_text(s)
    if t.casefold() in _PLACEHOLDER_WORDS:
        return True
    return any(r.search(t) for r in _PLACEHOLDER_RES)


def _bare(s: str) -> str:
    return re.sub(r"[\s_\-]+", "", s).casefold()


def placeholders(value: Any, key: str | None = None) -> list[str]:
    """Every placeholder-looking string among `value`'s leaves; a string that
    only repeats its own property's name ("city": "city") counts too."""
    if isinstance(value, str):
        echo = key is not None and _bare(value) == _bare(key) and _bare(key) != ""
        return [value] if echo or is_placeholder(value) else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in placeholders(v, k)]
    if isinstance(value, list):
        return [p for v in value for p in placeholders(v, key)]
    return []


def _expected_strings(expect: dict) -> set[str]:
    out: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.add(norm_text(v).casefold())
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    for c in expect.get("calls") or []:
        walk(c.get("arguments"))
        walk(c.get("optional"))
    return out


def answered_calls(messages: list[dict]) -> list[dict]:
    """Calls made earlier in the conversation whose results came back."""
    out: list[dict] = []
    pending: list[dict] = []
    for m in messages:
        role = m.get("role")
        if role == "assistant":
            pending = []
            for c in m.get("tool_calls") or []:
                fn = c.get("function", c)
                pending.append({"name": fn.get("name"), "arguments": fn.get("arguments") or {}})
        elif role == "tool" and pending:
            out.extend(pending)
            pending = []
    return out


def is_repeat(call: dict, answered: list[dict], params_by_name: dict) -> bool:
    """`call` asks again what an answered call already asked: same tool, and
    every argument the earlier call gave is given again with the same value."""
    args = call.get("arguments")
    if not isinstance(args, dict):
        return False
    for prev in answered:
        if prev["name"] != call.get("name"):
            continue
        params = params_by_name.get(prev["name"])
        if all(k in args and value_matches(v, args[k], _prop(params, k)) for k, v in prev["arguments"].items()):
            return True
    return False


_TRUNCATION = re.compile(r"cut off|truncat|done_reason\W+length|max(imum)? (output )?tokens", re.I)


# --- one case --------------------------------------------------------------------


def tool_params(tools: list[dict]) -> dict[str, Any]:
    """name -> parameters schema, from Ollama-shaped tool definitions."""
    out = {}
    for t in tools:
        fn = t.get("function", t)
        out[fn["name"]] = fn.get("parameters") or {}
    return out


def score(case: dict, outcome: dict) -> dict:
    """The scores and flags of one outcome (see the module docs)."""
    params = tool_params(case["tools"])
    expect = case["expect"]
    status = outcome.get("status")
    calls = outcome.get("calls") or []
    content = outcome.get("content") or ""
    error = outcome.get("error") or ""
    answered = status == 200 and not outcome.get("malformed")
    problems: list[str] = []
    if status != 200:
        problems.append(f"status {status}: {error}"[:300])
    elif outcome.get("malformed"):
        problems.append(f"malformed: {outcome['malformed']}"[:300])
    for c in calls:
        name = c.get("name")
        if name not in params:
            problems.append(f"undeclared tool {name!r}")
        elif not isinstance(c.get("arguments"), dict):
            problems.append(f"{name}: arguments are not an object")
        else:
            problems += [f"{name}: {e}" for e in schema_check.errors(c["arguments"], params[name])]
    if answered and not calls and not content.strip():
        problems.append("empty answer")
    well_formed = answered and not problems

    if "calls" in expect:
        want = expect["calls"]
        right_tools = answered and Counter(c.get("name") for c in calls) == Counter(w["name"] for w in want)
        right_count = answered and len(calls) == len(want)
        exact = answered and _perfect_matching(
            want, calls, lambda w, a: call_matches(w, a, params.get(w["name"])))
    else:
        right_tools = right_count = answered and not calls
        exact = right_count and well_formed

    known = _expected_strings(expect)
    found = [p for c in calls for p in placeholders(c.get("arguments")) if norm_text(p).casefold() not in known]
    prior = answered_calls(case["messages"])
    repeats = sum(1 for c in calls if is_repeat(c, prior, params)) if prior else 0
    mentions = expect.get("mentions")
    cites = None
    if mentions and answered and not calls:
        cites = any(m.casefold() in content.casefold() for m in mentions)
    truncated = outcome.get("done_reason") == "length" or outcome.get("done") is False \
        or bool(_TRUNCATION.search(error)) \
        or bool(_TRUNCATION.search(outcome.get("malformed") or ""))
    return {
        "id": case["id"],
        "category": case["category"],
        "well_formed": bool(well_formed),
        "right_tools": bool(right_tools),
        "right_count": bool(right_count),
        "exact_args": bool(exact),
        "placeholders": found,
        "repeated_calls": repeats,
        "status_422": status == 422,
        "status_5xx": isinstance(status, int) and status >= 500,
        "truncated": truncated,
        "other_error": status is None or (isinstance(status, int) and status != 200 and status != 422 and status < 500),
        "answer_cites": cites,
        "problems": problems,
        "upstream_calls": outcome.get("upstream_calls"),
        "latency_s": outcome.get("latency_s"),
    }


# --- tables --------------------------------------------------------------------


def summarize(scores: list[dict]) -> dict:
    n = len(scores)

    def pct(key: str) -> float:
        return 100.0 * sum(1 for s in scores if s[key]) / n if n else 0.0

    ups = [s["upstream_calls"] for s in scores if s["upstream_calls"] is not None]
    lat = [s["latency_s"] for s in scores if s["latency_s"] is not None]
    return {
        "cases": n,
        "well_formed": pct("well_formed"),
        "right_tools": pct("right_tools"),
        "right_count": pct("right_count"),
        "exact_args": pct("exact_args"),
        "placeholders": sum(1 for s in scores if s["placeholders"]),
        "repeated": sum(1 for s in scores if s["repeated_calls"]),
        "s422": sum(1 for s in scores if s["status_422"]),
        "s5xx": sum(1 for s in scores if s["status_5xx"]),
        "truncated": sum(1 for s in scores if s["truncated"]),
        "other_errors": sum(1 for s in scores if s["other_error"]),
        "upstream_calls": sum(ups) / len(ups) if ups else None,
        "latency_s": sum(lat) / len(lat) if lat else None,
    }


HEADER = ("| row | cases | well-formed | right tools | right count | exact args | placeholder args "
          "| repeated calls | 422s | 5xx | truncated | other errors | upstream calls / question | mean latency |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def table_row(label: str, s: dict) -> str:
    up = "–" if s["upstream_calls"] is None else f"{s['upstream_calls']:.2f}"
    lat = "–" if s["latency_s"] is None else f"{s['latency_s']:.1f} s"
    return (f"| {label} | {s['cases']} | {s['well_formed']:.0f}% | {s['right_tools']:.0f}% "
            f"| {s['right_count']:.0f}% | {s['exact_args']:.0f}% | {s['placeholders']} | {s['repeated']} "
            f"| {s['s422']} | {s['s5xx']} | {s['truncated']} | {s['other_errors']} | {up} | {lat} |")


def tables(results: dict[str, list[dict]], labels: dict[str, str] | None = None) -> str:
    """One markdown table per category present, then the overall table.
    `results` maps a row key to its scores, in the order the rows ran."""
    labels = labels or {}
    present = [c for c in CATEGORIES if any(s["category"] == c for ss in results.values() for s in ss)]
    present += sorted({s["category"] for ss in results.values() for s in ss} - set(present))
    out = []
    for cat in present + ["overall"]:
        lines = [f"#### {cat}", "", HEADER]
        for key, ss in results.items():
            chosen = ss if cat == "overall" else [s for s in ss if s["category"] == cat]
            if chosen:
                lines.append(table_row(labels.get(key, key), summarize(chosen)))
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"
