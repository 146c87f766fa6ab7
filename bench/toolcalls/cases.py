"""Loading the cases and the tool library they name.

A case file is a JSON array of cases:

    {"id": "weather_lyon", "category": "one_call",
     "tools": ["get_weather", ...],          # names in tools.json, or whole tool objects
     "messages": [{"role": "user", "content": "What's the weather in Lyon?"}],
     "expect": {"calls": [{"name": "get_weather", "arguments": {"city": "Lyon"},
                           "optional": {"unit": {"$any": true}}}]}}
     # or "expect": {"answer": true, "mentions": ["Paris"]}

`mentions` (any one of them, case-insensitive) is recorded per case as
`answer_cites`; it is not part of the tables. Loaded cases carry their tools
as Ollama tool definitions ({"type": "function", "function": {...}}).
"""

from __future__ import annotations

import json
from pathlib import Path

import checker

HERE = Path(__file__).resolve().parent
TOOLS_FILE = HERE / "tools.json"


def default_case_files() -> list[Path]:
    """cases_<category>.json beside this file, in the order of checker.CATEGORIES."""
    order = {c: i for i, c in enumerate(checker.CATEGORIES)}
    return sorted(HERE.glob("cases_*.json"), key=lambda p: (order.get(p.stem[6:], len(order)), p.name))


def load_library(path: Path = TOOLS_FILE) -> dict[str, dict]:
    data = json.loads(Path(path).read_text())
    return {name: {"type": "function", "function": {"name": name, **spec}} for name, spec in data.items()}


def _tool(entry, library: dict[str, dict], where: str) -> dict:
    if isinstance(entry, str):
        if entry not in library:
            raise ValueError(f"{where}: unknown tool {entry!r}")
        return library[entry]
    if isinstance(entry, dict):
        fn = entry.get("function", entry)
        if not isinstance(fn.get("name"), str):
            raise ValueError(f"{where}: a tool object needs a name")
        return {"type": "function", "function": fn}
    raise ValueError(f"{where}: a tool is a name or an object")


def load(files: list[Path] | None = None, library: dict[str, dict] | None = None) -> list[dict]:
    """Every case of `files` (default: cases_*.json beside this file), checked."""
    library = load_library() if library is None else library
    out: list[dict] = []
    seen: set[str] = set()
    for f in files or default_case_files():
        for raw in json.loads(Path(f).read_text()):
            where = f"{Path(f).name}:{raw.get('id')}"
            case = dict(raw)
            case["tools"] = [_tool(t, library, where) for t in raw.get("tools", [])]
            problems = check_case(case)
            if case["id"] in seen:
                problems.append("duplicate id")
            if problems:
                raise ValueError(f"{where}: " + "; ".join(problems))
            seen.add(case["id"])
            out.append(case)
    return out


def check_case(case: dict) -> list[str]:
    """What is wrong with a case (empty when it is usable)."""
    problems = []
    for key in ("id", "category", "messages", "expect"):
        if key not in case:
            problems.append(f"missing {key}")
    if problems:
        return problems
    if not case["messages"] or not case["tools"]:
        problems.append("needs messages and tools")
    expect = case["expect"]
    params = checker.tool_params(case["tools"])
    if "calls" in expect:
        if not expect["calls"]:
            problems.append("expect.calls is empty")
        for c in expect["calls"]:
            if c.get("name") not in params:
                problems.append(f"expected call to a tool not offered: {c.get('name')!r}")
    elif expect.get("answer") is not True:
        problems.append("expect needs calls or answer: true")
    return problems


def select(all_cases: list[dict], categories: list[str] | None = None, limit: int | None = None) -> list[dict]:
    """The cases of `categories` (all when None); with `limit`, that many
    taken in turn from each category so a short run still covers them all.
    The order is always the order of the files."""
    chosen = [c for c in all_cases if not categories or c["category"] in categories]
    if limit is None or limit >= len(chosen):
        return chosen
    by_cat: dict[str, list[dict]] = {}
    for c in chosen:
        by_cat.setdefault(c["category"], []).append(c)
    picked: set[str] = set()
    i = 0
    while len(picked) < limit:
        for cs in by_cat.values():
            if i < len(cs) and len(picked) < limit:
                picked.add(cs[i]["id"])
        i += 1
    return [c for c in chosen if c["id"] in picked]
