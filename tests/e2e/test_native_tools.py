"""Native tool calls from the real model, checked, recovered and repaired by augur.

The front serves the same Gemma 3 270M GGUF a second time as a tool-capable
model (`tools_model_name`, gemma3-tools:270m): its template declares the
tools and Ollama's own tool parser reads the answer (model-server/ollama_front,
"Native tools"). The base model has no tool training, so its native calls
fail the ways a small model's do, each one reproduced here at temperature 0
with a fixed seed by the conversation before the question:

- two earlier calls of the same form: the right call, which must pass
  through augur untouched, in one upstream call;
- two earlier calls with `days` as a string: the same mistake, repaired
  (`native_call_repaired`);
- no history: the model copies the template's example tool, which is not
  declared, so Ollama's parser swallows the call and the answer is empty
  (`lost_call_recovered`, asked again under emulation);
- an earlier answer with the call written as a `tool_code` block: the call
  stays in the content (`text_tool_call`, rescued);
- two earlier calls without the required `days`: the same omission, which
  no repair can fill; a stream ends with an error naming the tool.

Assertions are on protocol and validity (declared tools, schema-valid
arguments, the repair augur reports), never on the model's wording.
"""

import json
import re

import httpx
import pytest

OPTS = {"temperature": 0, "seed": 42, "num_predict": 512}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                   "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Get the current time in a timezone",
    "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}
FORECAST = {"type": "function", "function": {
    "name": "get_forecast", "description": "Weather forecast for a city for some days",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city", "days"]}}}
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME, FORECAST)}


def user(text):
    return {"role": "user", "content": text}


def called(name, args):
    return {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name, "arguments": args}}]}


RIGHT = ([user("What is the weather in Rome?"), called("get_weather", {"city": "Rome"}),
          user("What is the weather in Oslo?"), called("get_weather", {"city": "Oslo"}),
          user("What is the weather in Paris?")], [WEATHER, TIME])
DAYS_AS_STRING = ([user("Forecast for Rome, 2 days?"), called("get_forecast", {"city": "Rome", "days": "2"}),
                   user("Forecast for Oslo, 5 days?"), called("get_forecast", {"city": "Oslo", "days": "5"}),
                   user("Forecast for Paris, 3 days?")], [FORECAST, WEATHER])
LOST = ([user("What is the weather in Paris?")], [WEATHER, TIME])
AS_TEXT = ([user("What is the weather in Rome?"),
            {"role": "assistant", "content": '```tool_code\nget_weather(city="Rome")\n```'},
            user("12 C, cloudy"), {"role": "assistant", "content": "It is 12 C and cloudy in Rome."},
            user("What is the weather in Paris?")], [WEATHER, TIME])
# The model repeats the block until the token bound; 128 tokens keep a few
# blocks (at 512, augur rescues 16 calls and leaves the rest in the content).
AS_TEXT_TOKENS = 128
NO_DAYS = ([user("Forecast for Rome?"), called("get_forecast", {"city": "Rome"}),
            user("Forecast for Oslo?"), called("get_forecast", {"city": "Oslo"}),
            user("Forecast for Paris?")], [FORECAST, WEATHER])


# --- helpers ------------------------------------------------------------------------

def metric(admin_url, name, **labels):
    text = httpx.get(admin_url + "/metrics", timeout=10).text
    total = 0.0
    for m in re.finditer(r"^%s(\{[^}]*\})? (\S+)$" % re.escape(name), text, re.M):
        if all('%s="%s"' % kv in (m.group(1) or "") for kv in labels.items()):
            total += float(m.group(2))
    return total


def upstream_calls(admin_url):
    return metric(admin_url, "augur_upstream_requests_total")


def check_call(name, args):
    """A call to a declared tool whose arguments fit its schema (the few keywords used here)."""
    assert name in SCHEMAS, name
    if isinstance(args, str):
        args = json.loads(args)
    schema = SCHEMAS[name]
    assert isinstance(args, dict), args
    for key in schema["required"]:
        assert key in args, (name, args)
    for key, val in args.items():
        want = schema["properties"].get(key, {}).get("type")
        if want == "string":
            assert isinstance(val, str), (name, key, val)
        elif want == "integer":
            assert isinstance(val, int) and not isinstance(val, bool), (name, key, val)
    return args


def check_native(message):
    """Ollama's message shape: tool_calls with call_ ids, indexes, and valid arguments."""
    calls = message.get("tool_calls") or []
    for i, c in enumerate(calls):
        assert c["id"].startswith("call_")
        assert c["function"]["index"] == i
        check_call(c["function"]["name"], c["function"]["arguments"])
    return calls


def native_stream_calls(lines):
    """The calls of an NDJSON stream: one call or more per chunk, indexes counting across the stream."""
    calls = [c for line in lines for c in (line.get("message") or {}).get("tool_calls") or []]
    check_native({"tool_calls": calls})
    return calls


def chat(url, case, model, stream=False, num_predict=OPTS["num_predict"]):
    msgs, tools = case
    body = {"model": model, "messages": msgs, "tools": tools, "stream": stream,
            "options": dict(OPTS, num_predict=num_predict)}
    if not stream:
        return httpx.post(url + "/api/chat", json=body, timeout=300)
    with httpx.stream("POST", url + "/api/chat", json=body, timeout=300) as r:
        lines = [json.loads(line) for line in r.iter_lines() if line.strip()]
    return r, lines


def openai_messages(msgs):
    out = []
    for i, m in enumerate(msgs):
        if m.get("tool_calls"):
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_%d" % i, "type": "function",
                 "function": {"name": c["function"]["name"], "arguments": json.dumps(c["function"]["arguments"])}}
                for c in m["tool_calls"]]})
        else:
            out.append(m)
    return out


def openai_chat(url, case, model, stream=False):
    msgs, tools = case
    body = {"model": model, "messages": openai_messages(msgs), "tools": tools, "temperature": 0, "seed": 42,
            "max_tokens": OPTS["num_predict"], "stream": stream}
    r = httpx.post(url + "/v1/chat/completions", json=body, timeout=300)
    if not stream:
        return r, None
    events = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]", r.text
    return r, [json.loads(e) for e in events[:-1]]


def stream_calls(chunks):
    """The tool calls of an OpenAI stream, each sent whole in one delta."""
    calls = []
    for ch in chunks:
        for c in (ch["choices"][0]["delta"].get("tool_calls") or []) if ch["choices"] else []:
            calls.append(c)
    return calls


# --- the upstream as Ollama would answer ------------------------------------------

def test_the_front_serves_the_gguf_as_a_tool_capable_model(front_url, model_name, tools_model_name):
    caps = {m["name"]: m["capabilities"] for m in httpx.get(front_url + "/api/tags", timeout=30).json()["models"]}
    assert caps == {model_name: ["completion"], tools_model_name: ["completion", "tools"]}
    show = httpx.post(front_url + "/api/show", json={"model": tools_model_name}, timeout=30).json()
    assert show["capabilities"] == ["completion", "tools"] and ".ToolCalls" in show["template"]


def test_ollamas_parser_swallows_a_call_to_an_undeclared_tool(front_url, tools_model_name):
    """The failure augur recovers below: no call, no content, tokens generated."""
    r = chat(front_url, LOST, tools_model_name)
    assert r.status_code == 200, r.text
    v = r.json()
    assert v["message"] == {"role": "assistant", "content": ""} and v["eval_count"] > 0


# --- a right call ----------------------------------------------------------------

def test_a_right_native_call_passes_through_untouched(augur_url, admin_url, tools_model_name):
    before, valid = upstream_calls(admin_url), metric(admin_url, "augur_native_calls_total", outcome="valid")
    r = chat(augur_url, RIGHT, tools_model_name)
    assert r.status_code == 200, r.text
    calls = check_native(r.json()["message"])
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    assert r.json()["message"]["content"] == ""
    for h in ("x-augur-repaired", "x-augur-attempts", "x-augur-validation", "x-augur-emulated"):
        assert h not in r.headers, (h, r.headers[h])
    assert upstream_calls(admin_url) - before == 1
    assert metric(admin_url, "augur_native_calls_total", outcome="valid") - valid == 1


def test_a_right_native_call_streams_as_one_chunk(augur_url, admin_url, tools_model_name):
    before = upstream_calls(admin_url)
    r, lines = chat(augur_url, RIGHT, tools_model_name, stream=True)
    assert r.status_code == 200
    with_calls = [line for line in lines if line.get("message", {}).get("tool_calls")]
    assert len(with_calls) == 1
    [call] = check_native(with_calls[0]["message"])
    assert call["function"]["name"] == "get_weather"
    done = lines[-1]
    assert done["done"] is True and "error" not in done
    assert not [k for k in done if k.startswith("augur_")], done
    assert upstream_calls(admin_url) - before == 1


def test_a_right_call_on_the_openai_surface(augur_url, tools_model_name):
    r, _ = openai_chat(augur_url, RIGHT, tools_model_name)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    [c] = choice["message"]["tool_calls"]
    assert c["type"] == "function" and c["id"].startswith("call_")
    check_call(c["function"]["name"], c["function"]["arguments"])
    assert "x-augur-repaired" not in r.headers


# --- arguments that do not fit the schema ----------------------------------------

def test_arguments_of_the_wrong_type_are_repaired(augur_url, admin_url, tools_model_name):
    before = upstream_calls(admin_url)
    r = chat(augur_url, DAYS_AS_STRING, tools_model_name)
    assert r.status_code == 200, r.text
    assert "native_call_repaired" in r.headers.get("x-augur-repaired", ""), r.headers
    calls = check_native(r.json()["message"])
    assert [c["function"]["name"] for c in calls] == ["get_forecast"]
    assert upstream_calls(admin_url) - before == 1  # repaired in place, not asked again


def test_arguments_of_the_wrong_type_are_repaired_in_a_stream(augur_url, tools_model_name):
    r, lines = chat(augur_url, DAYS_AS_STRING, tools_model_name, stream=True)
    assert r.status_code == 200
    calls = native_stream_calls(lines)
    assert [c["function"]["name"] for c in calls] == ["get_forecast"]
    assert "native_call_repaired" in lines[-1].get("augur_repaired", ""), lines[-1]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_arguments_of_the_wrong_type_are_repaired_on_the_openai_surface(augur_url, tools_model_name, stream):
    r, chunks = openai_chat(augur_url, DAYS_AS_STRING, tools_model_name, stream)
    assert r.status_code == 200, r.text
    if stream:
        calls = stream_calls(chunks)
        assert chunks[-1]["choices"] == [] or chunks[-1]["choices"][0]["finish_reason"] in ("tool_calls", None)
        assert any(ch["choices"] and ch["choices"][0]["finish_reason"] == "tool_calls" for ch in chunks)
    else:
        calls = r.json()["choices"][0]["message"]["tool_calls"]
        assert "native_call_repaired" in r.headers.get("x-augur-repaired", "")
    assert [c["function"]["name"] for c in calls] == ["get_forecast"]
    for c in calls:
        check_call(c["function"]["name"], c["function"]["arguments"])


def test_a_required_argument_no_repair_can_fill_ends_the_stream_with_a_clear_error(augur_url, tools_model_name):
    r, lines = chat(augur_url, NO_DAYS, tools_model_name, stream=True)
    assert r.status_code == 200
    assert not [line for line in lines if line.get("message", {}).get("tool_calls")], lines
    error = lines[-1].get("error", "")
    assert "get_forecast" in error and "days" in error, lines[-1]


# --- a lost call --------------------------------------------------------------------

def test_a_swallowed_call_is_recovered(augur_url, admin_url, tools_model_name):
    recovered = metric(admin_url, "augur_native_calls_total", outcome="recovered")
    r = chat(augur_url, LOST, tools_model_name)
    assert r.status_code == 200, r.text
    assert "lost_call_recovered" in r.headers.get("x-augur-repaired", ""), r.headers
    assert r.headers.get("x-augur-attempts") == "2"
    calls = check_native(r.json()["message"])
    assert calls, r.json()
    assert metric(admin_url, "augur_native_calls_total", outcome="recovered") - recovered == 1


def test_a_swallowed_call_is_recovered_in_a_stream(augur_url, tools_model_name):
    r, lines = chat(augur_url, LOST, tools_model_name, stream=True)
    assert r.status_code == 200
    calls = native_stream_calls(lines)
    assert calls, lines
    assert lines[-1]["done"] is True and "lost_call_recovered" in lines[-1].get("augur_repaired", ""), lines[-1]


def test_a_swallowed_call_is_recovered_on_the_openai_surface(augur_url, tools_model_name):
    r, _ = openai_chat(augur_url, LOST, tools_model_name)
    assert r.status_code == 200, r.text
    assert "lost_call_recovered" in r.headers.get("x-augur-repaired", "")
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["tool_calls"]
    for c in choice["message"]["tool_calls"]:
        check_call(c["function"]["name"], c["function"]["arguments"])


# --- a call written as text ------------------------------------------------------------

def test_a_call_left_in_the_content_is_rescued(augur_url, tools_model_name):
    r = chat(augur_url, AS_TEXT, tools_model_name, num_predict=AS_TEXT_TOKENS)
    assert r.status_code == 200, r.text
    assert "text_tool_call" in r.headers.get("x-augur-repaired", ""), r.headers
    msg = r.json()["message"]
    calls = check_native(msg)
    assert calls and {c["function"]["name"] for c in calls} == {"get_weather"}
    assert "get_weather(" not in msg["content"]


def test_a_call_left_in_the_content_is_rescued_in_a_stream(augur_url, tools_model_name):
    r, lines = chat(augur_url, AS_TEXT, tools_model_name, stream=True, num_predict=AS_TEXT_TOKENS)
    assert r.status_code == 200
    calls = native_stream_calls(lines)
    assert calls and {c["function"]["name"] for c in calls} == {"get_weather"}
    text = "".join((line.get("message") or {}).get("content", "") for line in lines)
    assert "get_weather(" not in text
    assert lines[-1]["done"] is True and "error" not in lines[-1]


# --- the Anthropic surface ---------------------------------------------------------------

def anthropic(url, case, model, stream=False):
    msgs, tools = case
    out = []
    for i, m in enumerate(msgs):
        if m.get("tool_calls"):
            out.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_%d" % i, "name": c["function"]["name"],
                 "input": c["function"]["arguments"]} for c in m["tool_calls"]]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    body = {"model": model, "max_tokens": OPTS["num_predict"], "temperature": 0, "messages": out, "stream": stream,
            "tools": [{"name": t["function"]["name"], "description": t["function"]["description"],
                       "input_schema": t["function"]["parameters"]} for t in tools]}
    r = httpx.post(url + "/v1/messages", json=body, timeout=300)
    if not stream:
        return r, None
    events = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: ")]
    return r, events


def anthropic_stream_calls(events):
    """(name, input) of each tool_use block of a Messages stream, its input from the json deltas."""
    names, parts = {}, {}
    for e in events:
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use":
            names[e["index"]] = e["content_block"]["name"]
        elif e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
            parts.setdefault(e["index"], []).append(e["delta"]["partial_json"])
    return [(names[i], json.loads("".join(parts.get(i, [])) or "{}")) for i in sorted(names)]


def test_anthropic_messages_right_call_repair_and_recovery(augur_url, tools_model_name):
    r, _ = anthropic(augur_url, RIGHT, tools_model_name)
    assert r.status_code == 200, r.text
    assert [b["type"] for b in r.json()["content"]] == ["tool_use"] and r.json()["stop_reason"] == "tool_use"
    assert "x-augur-repaired" not in r.headers
    r, _ = anthropic(augur_url, DAYS_AS_STRING, tools_model_name)
    assert r.status_code == 200, r.text
    assert "native_call_repaired" in r.headers.get("x-augur-repaired", "")
    for b in r.json()["content"]:
        check_call(b["name"], b["input"])
    r, _ = anthropic(augur_url, LOST, tools_model_name)
    assert r.status_code == 200, r.text
    assert "lost_call_recovered" in r.headers.get("x-augur-repaired", "")
    blocks = [b for b in r.json()["content"] or [] if b["type"] == "tool_use"]
    assert blocks and r.json()["stop_reason"] == "tool_use"
    for b in blocks:
        check_call(b["name"], b["input"])


@pytest.mark.parametrize("case", ["days_as_string", "lost"])
def test_anthropic_messages_stream_carries_valid_calls(augur_url, tools_model_name, case):
    r, events = anthropic(augur_url, DAYS_AS_STRING if case == "days_as_string" else LOST, tools_model_name,
                          stream=True)
    assert r.status_code == 200, r.text
    calls = anthropic_stream_calls(events)
    assert calls, events
    for name, args in calls:
        check_call(name, args)
    assert events[-1]["type"] == "message_stop"
    assert [e for e in events if e["type"] == "message_delta"][-1]["delta"]["stop_reason"] == "tool_use"
