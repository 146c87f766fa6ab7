"""The checker, the schema checker and the case files, without any model."""

import copy

import pytest

import cases as caselib
import checker
import schema_check

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"},
                                     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
MAIL = {"type": "function", "function": {"name": "send_email", "parameters": {
    "type": "object", "properties": {"to": {"type": "string", "format": "email"}, "n": {"type": "integer"},
                                     "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["to"]}}}


def case(expect, tools=(WEATHER, TIME), messages=None, category="one_call"):
    return {"id": "t", "category": category, "tools": list(tools),
            "messages": messages or [{"role": "user", "content": "q"}], "expect": expect}


def ok(calls=(), content="", **kw):
    return {"status": 200, "calls": list(calls), "content": content, "latency_s": 1.0, **kw}


def call(name, **args):
    return {"name": name, "arguments": args}


LYON = {"calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}}]}


# --- calls ---------------------------------------------------------------------


def test_exact_call_scores_everything():
    s = checker.score(case(LYON), ok([call("get_weather", city="Lyon")]))
    assert (s["well_formed"], s["right_tools"], s["right_count"], s["exact_args"]) == (True, True, True, True)
    assert not s["placeholders"] and s["repeated_calls"] == 0 and not s["problems"]


def test_whitespace_is_normalized_but_case_is_not_for_free_text():
    assert checker.score(case(LYON), ok([call("get_weather", city="  Lyon ")]))["exact_args"]
    s = checker.score(case(LYON), ok([call("get_weather", city="lyon")]))
    assert s["right_tools"] and not s["exact_args"]


def test_enum_case_and_int_float_are_normalized():
    exp = {"calls": [{"name": "get_weather", "arguments": {"city": "Lyon", "unit": "celsius"}}]}
    s = checker.score(case(exp), ok([call("get_weather", city="Lyon", unit="Celsius")]))
    assert s["exact_args"]
    assert not s["well_formed"]  # "Celsius" is not in the enum: the call itself is invalid
    assert checker.value_matches(3, 3.0) and checker.value_matches(2.5, 2.5)
    assert not checker.value_matches(1, True) and not checker.value_matches(True, 1)
    assert not checker.value_matches(30, "30")


def test_wrong_argument_value_or_extra_key():
    s = checker.score(case(LYON), ok([call("get_weather", city="Paris")]))
    assert s["right_tools"] and s["right_count"] and s["well_formed"] and not s["exact_args"]
    s = checker.score(case(LYON), ok([call("get_weather", city="Lyon", unit="celsius")]))
    assert not s["exact_args"]
    opt = {"calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}, "optional": {"unit": {"$any": True}}}]}
    assert checker.score(case(opt), ok([call("get_weather", city="Lyon", unit="celsius")]))["exact_args"]
    assert checker.score(case(opt), ok([call("get_weather", city="Lyon")]))["exact_args"]


def test_missing_required_argument():
    s = checker.score(case(LYON), ok([call("get_weather")]))
    assert not s["well_formed"] and s["right_tools"] and not s["exact_args"]
    assert any("missing required 'city'" in p for p in s["problems"])


def test_wrong_tool():
    s = checker.score(case(LYON), ok([call("get_time", city="Lyon")]))
    assert s["well_formed"] and not s["right_tools"] and s["right_count"] and not s["exact_args"]


def test_undeclared_tool_is_not_well_formed():
    s = checker.score(case(LYON), ok([call("get_forecast", city="Lyon")]))
    assert not s["well_formed"] and any("undeclared" in p for p in s["problems"])


def test_arguments_not_an_object():
    s = checker.score(case(LYON), ok([{"name": "get_weather", "arguments": "city=Lyon"}]))
    assert not s["well_formed"] and not s["exact_args"]


def test_parallel_calls_are_order_insensitive():
    exp = {"calls": [{"name": "get_weather", "arguments": {"city": "Paris"}},
                     {"name": "get_time", "arguments": {"city": "Rome"}}]}
    s = checker.score(case(exp), ok([call("get_time", city="Rome"), call("get_weather", city="Paris")]))
    assert s["exact_args"] and s["right_tools"] and s["right_count"]


def test_parallel_multiset_of_names_and_count():
    exp = {"calls": [{"name": "get_weather", "arguments": {"city": "Paris"}},
                     {"name": "get_weather", "arguments": {"city": "Rome"}}]}
    one = checker.score(case(exp), ok([call("get_weather", city="Paris")]))
    assert not one["right_tools"] and not one["right_count"] and not one["exact_args"]
    same_twice = checker.score(case(exp), ok([call("get_weather", city="Paris"), call("get_weather", city="Paris")]))
    assert same_twice["right_tools"] and same_twice["right_count"] and not same_twice["exact_args"]
    mixed = checker.score(case(exp), ok([call("get_weather", city="Paris"), call("get_time", city="Rome")]))
    assert not mixed["right_tools"] and mixed["right_count"]


def test_matchers():
    assert checker.value_matches({"$one_of": ["km", "kilometres"]}, "kilometres")
    assert not checker.value_matches({"$one_of": ["km"]}, "miles")
    assert checker.value_matches({"$contains": "solar  eclipse"}, "Next Solar eclipse date")
    assert not checker.value_matches({"$contains": "eclipse"}, 3)
    assert checker.value_matches({"$unordered": ["a", "b"]}, ["b", "a"])
    assert not checker.value_matches({"$unordered": ["a", "b"]}, ["a", "a"])
    assert not checker.value_matches(["a", "b"], ["b", "a"])
    assert checker.value_matches({"$any": True}, {"x": 1})
    items = {"type": "array", "items": {"type": "object", "properties": {"size": {"enum": ["large"]}}}}
    assert checker.value_matches({"$unordered": [{"size": "large"}]}, [{"size": "LARGE"}], items)
    with pytest.raises(ValueError):
        checker.value_matches({"$regex": "x"}, "x")


def test_nested_objects_compare_by_key():
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"k": {"enum": ["x"]}}}}}
    assert checker.value_matches({"a": {"k": "x", "n": 1}}, {"a": {"n": 1.0, "k": "X"}}, schema)
    assert not checker.value_matches({"a": {"k": "x"}}, {"a": {"k": "x", "extra": 1}}, schema)


# --- answers -------------------------------------------------------------------


def test_plain_answer_when_no_call_expected():
    exp = {"answer": True, "mentions": ["Paris"]}
    s = checker.score(case(exp, category="no_call"), ok(content="The capital is Paris."))
    assert (s["well_formed"], s["right_tools"], s["right_count"], s["exact_args"]) == (True, True, True, True)
    assert s["answer_cites"] is True
    s = checker.score(case(exp, category="no_call"), ok(content="Lyon."))
    assert s["exact_args"] and s["answer_cites"] is False


def test_call_when_answer_expected():
    s = checker.score(case({"answer": True}), ok([call("get_weather", city="Lyon")]))
    assert s["well_formed"] and not s["right_tools"] and not s["right_count"] and not s["exact_args"]


def test_empty_answer_is_not_well_formed():
    s = checker.score(case({"answer": True}), ok(content="  "))
    assert not s["well_formed"] and not s["exact_args"] and s["right_count"]


def test_answer_when_call_expected():
    s = checker.score(case(LYON), ok(content="It is sunny in Lyon."))
    assert s["well_formed"] and not s["right_tools"] and not s["right_count"]


# --- statuses and flags -----------------------------------------------------------


def test_422_and_5xx_and_timeouts():
    s = checker.score(case(LYON), {"status": 422, "error": "answer failed validation", "latency_s": 2})
    assert s["status_422"] and not s["well_formed"] and not s["right_tools"] and not s["other_error"]
    s = checker.score(case({"answer": True}), {"status": 502, "error": "bad gateway", "latency_s": 2})
    assert s["status_5xx"] and not s["right_count"] and not s["exact_args"]
    s = checker.score(case(LYON), {"status": None, "error": "timeout: ReadTimeout", "latency_s": 300})
    assert s["other_error"] and not s["status_5xx"]


def test_malformed_reply_is_not_an_answer():
    s = checker.score(case({"answer": True}), ok(content="", malformed="not JSON"))
    assert not s["well_formed"] and not s["right_count"] and not s["exact_args"]


def test_truncation_is_flagged():
    assert checker.score(case(LYON), ok([call("get_weather", city="Ly")], done_reason="length"))["truncated"]
    s = checker.score(case(LYON), {"status": 422, "error": "model output was cut off before the JSON was complete"})
    assert s["truncated"] and s["status_422"]
    assert not checker.score(case(LYON), ok([call("get_weather", city="Lyon")], done_reason="stop"))["truncated"]
    assert checker.score(case({"answer": True}), ok(content="", malformed="not JSON", done=False))["truncated"]


@pytest.mark.parametrize("value", ["<city>", "<city", " <tool name> ", "string", "Example", "{{city}}", "${city}",
                                   "Lyon<end_of_turn>", "…", "integer"])
def test_placeholders_are_flagged(value):
    s = checker.score(case(LYON), ok([call("get_weather", city=value)]))
    assert s["placeholders"] == [value] and not s["exact_args"]


@pytest.mark.parametrize("value", ["Lyon", "New York", "a <b> c", "3 < 4", "Strings"])
def test_real_values_are_not_placeholders(value):
    assert not checker.score(case(LYON), ok([call("get_weather", city=value)]))["placeholders"]


def test_a_value_repeating_its_property_name_is_a_placeholder():
    s = checker.score(case(LYON, tools=(WEATHER, MAIL)), ok([call("send_email", to="To", tags=["tags"])]))
    assert s["placeholders"] == ["To", "tags"]
    assert checker.placeholders({"tracking_number": "tracking number"}) == ["tracking number"]
    assert checker.placeholders({"city": "Cityville"}) == []


def test_placeholder_nested_and_expected_values_are_exempt():
    s = checker.score(case(LYON, tools=(WEATHER, MAIL)), ok([call("send_email", to="a@b.co", tags=["x", "<tag>"])]))
    assert s["placeholders"] == ["<tag>"]
    exp = {"calls": [{"name": "get_weather", "arguments": {"city": "string"}}]}
    assert not checker.score(case(exp), ok([call("get_weather", city="string")]))["placeholders"]


RESULT_TURN = [
    {"role": "user", "content": "weather in Lyon?"},
    {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Lyon"}}}]},
    {"role": "tool", "tool_name": "get_weather", "content": "18 C"},
]


def test_repeated_call_after_its_result():
    c = case({"answer": True, "mentions": ["18"]}, messages=RESULT_TURN, category="after_result")
    s = checker.score(c, ok([call("get_weather", city="Lyon", unit="celsius")]))
    assert s["repeated_calls"] == 1 and not s["right_tools"]
    s = checker.score(c, ok([call("get_weather", city="Paris")]))
    assert s["repeated_calls"] == 0
    s = checker.score(c, ok(content="18 degrees in Lyon"))
    assert s["repeated_calls"] == 0 and s["exact_args"] and s["answer_cites"]


def test_unanswered_calls_are_not_repeats():
    msgs = RESULT_TURN[:2]
    assert checker.answered_calls(msgs) == []
    assert checker.answered_calls(RESULT_TURN) == [{"name": "get_weather", "arguments": {"city": "Lyon"}}]


# --- tables --------------------------------------------------------------------


def test_summary_and_tables():
    good = checker.score(case(LYON), ok([call("get_weather", city="Lyon")], upstream_calls=1.0))
    bad = checker.score(case(LYON, category="parallel"), {"status": 422, "error": "x", "latency_s": 3.0,
                                                          "upstream_calls": 2.0})
    summary = checker.summarize([good, bad])
    assert summary["cases"] == 2 and summary["exact_args"] == 50.0 and summary["s422"] == 1
    assert summary["upstream_calls"] == 1.5 and summary["latency_s"] == 2.0
    text = checker.tables({"a": [good], "augur": [good, bad]}, {"a": "ref-a", "augur": "augur"})
    assert text.index("#### one_call") < text.index("#### parallel") < text.index("#### overall")
    assert "| ref-a | 1 | 100% | 100% | 100% | 100% | 0 | 0 | 0 | 0 | 0 | 0 | 1.00 | 1.0 s |" in text
    overall = text[text.index("#### overall"):]
    assert "| augur | 2 | 50% | 50% | 50% | 50% | 0 | 0 | 1 | 0 | 0 | 0 | 1.50 | 2.0 s |" in overall
    parallel = text[text.index("#### parallel"):text.index("#### overall")]
    assert "ref-a" not in parallel


# --- the schema checker ---------------------------------------------------------------


@pytest.mark.parametrize("fmt,good,bad", [
    ("email", "a@example.com", "a@example"),
    ("date", "2024-02-29", "2025-02-29"),
    ("date-time", "2025-05-20T15:00:00Z", "2025-05-20 15:00"),
    ("uuid", "3f2b8c1e-9d4a-4e7b-a6c2-1b5d8e9f0a47", "3f2b8c1e-9d4a"),
    ("ipv4", "192.168.1.1", "192.168.1"),
    ("ipv4", "8.8.8.8", "256.1.1.1"),
    ("uri", "https://example.com/about", "example com"),
])
def test_formats(fmt, good, bad):
    schema = {"type": "string", "format": fmt}
    assert schema_check.errors(good, schema) == []
    assert schema_check.errors(bad, schema)


def test_schema_keywords():
    s = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
        "x": {"type": "number"},
        "e": {"enum": ["a", "b"]},
        "l": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2},
        "o": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"],
              "additionalProperties": False}},
        "required": ["n"]}
    assert schema_check.errors({"n": 3, "x": 1.5, "e": "a", "l": ["p"], "o": {"k": "v"}}, s) == []
    assert schema_check.errors({"n": 3.0}, s) == []  # 3.0 is an integer in JSON Schema
    assert schema_check.errors({"n": True}, s)
    assert schema_check.errors({"n": "3"}, s)
    assert schema_check.errors({"n": 6}, s)
    assert schema_check.errors({"n": 1, "x": "1.5"}, s)
    assert schema_check.errors({"n": 1, "e": "c"}, s)
    assert schema_check.errors({"n": 1, "l": []}, s)
    assert schema_check.errors({"n": 1, "l": [1]}, s)
    assert schema_check.errors({"n": 1, "o": {}}, s)
    assert schema_check.errors({"n": 1, "o": {"k": "v", "z": 1}}, s)
    assert schema_check.errors({}, s) == ["$: missing required 'n'"]
    assert schema_check.errors(1, {"anyOf": [{"type": "string"}, {"type": "integer"}]}) == []
    assert schema_check.errors(1.5, {"anyOf": [{"type": "string"}, {"type": "integer"}]})
    assert schema_check.errors("x", {"$ref": "#/$defs/n", "$defs": {"n": {"type": "integer"}}})


# --- the case files ------------------------------------------------------------------


def _literal(v):
    """A concrete instance of an expected value (first alternative of a matcher)."""
    if checker._is_matcher(v):
        op, arg = next(iter(v.items()))
        return {"$one_of": lambda: _literal(arg[0]), "$unordered": lambda: [_literal(x) for x in arg],
                "$contains": lambda: arg, "$any": lambda: None}[op]()
    if isinstance(v, dict):
        return {k: _literal(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_literal(x) for x in v]
    return v


ALL = caselib.load()


def test_enough_cases_in_every_category():
    assert len(ALL) >= 80
    by = {c: sum(1 for x in ALL if x["category"] == c) for c in checker.CATEGORIES}
    assert all(n >= 10 for n in by.values()), by
    assert {x["category"] for x in ALL} == set(checker.CATEGORIES)


@pytest.mark.parametrize("c", ALL, ids=lambda c: c["id"])
def test_case_is_consistent(c):
    """The expected outcome itself scores perfectly, and the category's rules hold."""
    n_tools = len(c["tools"])
    if "calls" in c["expect"]:
        calls = [{"name": e["name"], "arguments": _literal(e["arguments"])} for e in c["expect"]["calls"]]
        s = checker.score(c, ok(calls))
        assert s["well_formed"] and s["exact_args"] and not s["placeholders"], s["problems"]
        n_calls = len(calls)
    else:
        s = checker.score(c, ok(content="An answer."))
        assert s["exact_args"]
        n_calls = 0
    rules = {
        "one_call": n_tools == 1 and n_calls == 1,
        "pick_one": 2 <= n_tools <= 5 and n_calls == 1,
        "parallel": 2 <= n_calls <= 4,
        "no_call": n_calls == 0 and not checker.answered_calls(c["messages"]),
        "after_result": n_calls == 0 and checker.answered_calls(c["messages"]),
        "awkward_schema": n_calls >= 1,
        "multilingual": n_calls <= 4,
    }
    assert rules[c["category"]], c["id"]
    assert c["messages"][-1]["role"] in ("user", "tool")


def test_selection_takes_categories_in_turn():
    picked = caselib.select(ALL, limit=len(checker.CATEGORIES))
    assert sorted(x["category"] for x in picked) == sorted(checker.CATEGORIES)
    assert caselib.select(ALL, ["parallel"]) == [x for x in ALL if x["category"] == "parallel"]
    assert len(caselib.select(ALL, None, 10)) == 10


def test_bad_cases_are_refused(tmp_path):
    good = copy.deepcopy([{"id": "x", "category": "one_call", "tools": ["get_weather"],
                           "messages": [{"role": "user", "content": "q"}], "expect": LYON}])
    f = tmp_path / "cases_x.json"
    import json
    f.write_text(json.dumps(good))
    assert [c["id"] for c in caselib.load([f])] == ["x"]
    for broken in ({"tools": ["no_such_tool"]}, {"expect": {"calls": [{"name": "get_time", "arguments": {}}]}},
                   {"expect": {}}):
        f.write_text(json.dumps([{**good[0], **broken}]))
        with pytest.raises(ValueError):
            caselib.load([f])
    f.write_text(json.dumps(good + good))
    with pytest.raises(ValueError, match="duplicate"):
        caselib.load([f])
