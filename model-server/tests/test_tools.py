"""The tool-capable model name (`--tools-model`) against a fake llama-server.

The same GGUF served a second time, as Ollama serves a model whose template
declares tools: advertised with `capabilities: ["completion", "tools"]`,
its tools rendered into the prompt, and the model's text read by a port of
Ollama's generic tool parser (tools/tools.go, tag `<tool_call>`): a complete
call becomes one `tool_calls` chunk; text that is no call to a declared
tool after the tag is swallowed (no call, no content); a call written
without the tag stays in `content`.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from conftest import MODEL, PACKAGE, Response
from fake_llama import Reply
from ollama_front.tools import TAG, TOOLS_TEMPLATE, Parser, render

TOOLS_MODEL = "gemma3-tools:270m"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Local time", "parameters": {
        "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
TOOLS = [WEATHER, TIME]
MSGS = [{"role": "user", "content": "Weather in Paris?"}]
CALL_PIECES = ["<tool", "_call", ">\n", '{"name": "get_', 'weather", "arguments": ', '{"city": "Paris"}}',
               "\n</tool_call>"]


@pytest.fixture(scope="module")
def tools_front(fake_server, tmp_path_factory) -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("tools-front") / "front.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, str(PACKAGE), "--port", str(port), "--llama-url", fake_server.url,
                                 "--model", MODEL, "--tools-model", TOOLS_MODEL],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the front did not start:\n" + log.read_text(errors="replace"), pytrace=False)
                time.sleep(0.05)
        yield "127.0.0.1:%d" % port
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def tcall(tools_front):
    def do(method: str, path: str, body: Any = None) -> Response:
        host, port = tools_front.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Host": tools_front})
            r = conn.getresponse()
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            conn.close()
    return do


def chat(tcall, **kw) -> Response:
    body = {"model": TOOLS_MODEL, "messages": MSGS, "tools": TOOLS, "stream": False}
    body.update(kw)
    return tcall("POST", "/api/chat", body)


# --- the parser, as Ollama's tools.Parser ---------------------------------------

def feed(pieces: list[str], tools=TOOLS) -> tuple[list[dict[str, Any]], str]:
    p, calls, content = Parser(tools), [], []
    for piece in pieces:
        c, t = p.add(piece)
        calls += c
        content.append(t)
    if not calls:
        content.append(p.content())
    return calls, "".join(content)


def test_the_tag_is_the_text_after_tool_calls_in_the_template():
    body = TOOLS_TEMPLATE.split("{{- if .ToolCalls }}", 1)[1]
    assert body.strip().startswith(TAG)


def test_a_tagged_call_is_parsed_when_complete():
    calls, content = feed(CALL_PIECES)
    assert content == ""
    assert calls == [{"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}]


def test_parameters_is_read_as_arguments_and_two_calls_are_indexed():
    text = ('<tool_call>\n{"name": "get_time", "parameters": {"zone": "UTC"}}\n'
            '{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}\n</tool_call>')
    calls, _ = feed([text])
    assert [(c["function"]["name"], c["function"]["index"], c["function"]["arguments"]) for c in calls] == [
        ("get_time", 0, {"zone": "UTC"}), ("get_weather", 1, {"city": "Oslo"})]


def test_text_before_the_tag_is_content_and_a_partial_tag_is_held():
    p = Parser(TOOLS)
    assert p.add("Sure. <tool") == ([], "Sure. ")
    assert p.add("box") == ([], "<toolbox")


def test_an_undeclared_tool_after_the_tag_is_swallowed():
    calls, content = feed(['<tool_call>\n{"name": "get_stock", "arguments": {"s": "X"}}\n</tool_call>'])
    assert calls == [] and content == ""


def test_a_call_without_the_tag_stays_content():
    text = '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'
    assert feed([text]) == ([], text)


def test_a_call_without_arguments_is_no_call():
    assert feed(['<tool_call>{"name": "get_weather"}</tool_call>']) == ([], "")


# --- the prompt ------------------------------------------------------------------

def test_render_declares_tools_and_replays_calls_and_results():
    msgs = MSGS + [{"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "18 C, sunny"}]
    out = render(msgs, TOOLS)
    assert out.startswith("<start_of_turn>user\nTools:\n{\"type\":\"function\",\"function\":"
                          "{\"name\":\"get_weather\"")
    # the one-shot example (its tool is not the request's), then the conversation
    assert '{"name": "set_light", "arguments": {"room": "kitchen", "on": true}}' in out
    assert out.index("set_light") < out.index("Weather in Paris?")
    assert ('<start_of_turn>model\n<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n'
            '</tool_call><end_of_turn>\n') in out
    assert out.endswith("<start_of_turn>user\n<tool_response>\n18 C, sunny\n</tool_response><end_of_turn>\n"
                        "<start_of_turn>model\n")


# --- what clients see ------------------------------------------------------------

def test_tags_and_show_advertise_tools_only_for_the_tools_model(tcall):
    tags = {m["name"]: m["capabilities"] for m in tcall("GET", "/api/tags").json()["models"]}
    assert tags == {MODEL: ["completion"], TOOLS_MODEL: ["completion", "tools"]}
    show = tcall("POST", "/api/show", {"model": TOOLS_MODEL}).json()
    assert show["capabilities"] == ["completion", "tools"] and ".ToolCalls" in show["template"]
    assert tcall("POST", "/api/show", {"model": MODEL}).json()["capabilities"] == ["completion"]
    ids = [m["id"] for m in tcall("GET", "/v1/models").json()["data"]]
    assert ids == [MODEL, TOOLS_MODEL]


def test_the_plain_model_still_refuses_tools(tcall):
    r = chat(tcall, model=MODEL)
    assert r.status == 400 and r.json() == {"error": "registry.ollama.ai/library/gemma3:270m does not support tools"}


def test_whole_chat_returns_tool_calls_and_the_prompt_declares_the_tools(tcall, fake):
    fake.script(Reply(pieces=CALL_PIECES))
    r = chat(tcall, options={"temperature": 0, "seed": 1})
    assert r.status == 200, r.body
    msg = r.json()["message"]
    assert msg["content"] == ""
    [c] = msg["tool_calls"]
    assert c["id"].startswith("call_") and len(c["id"]) == 13
    assert c["function"] == {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}
    sent = fake.completions()[0]
    assert sent["stop"] == ["<end_of_turn>", "</tool_call>"]
    prompt = sent["prompt"]
    assert '"name":"get_time"' in prompt and prompt.endswith("Weather in Paris?<end_of_turn>\n<start_of_turn>model\n")


def test_stream_sends_the_call_as_one_chunk_when_complete(tcall, fake):
    fake.script(Reply(pieces=CALL_PIECES))
    r = chat(tcall, stream=True)
    chunks = r.lines()
    with_calls = [c for c in chunks if c["message"].get("tool_calls")]
    assert len(with_calls) == 1 and with_calls[0]["done"] is False
    assert with_calls[0]["message"]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris"}
    assert all(c["message"]["content"] == "" for c in chunks)
    assert chunks[-1]["done"] is True and chunks[-1]["done_reason"] == "stop"


def test_logprobs_of_a_call_go_out_while_the_parser_holds_its_text(tcall, fake):
    # ChatHandler sends the logprobs of text the tool parser buffers in chunks of their own
    # (empty content, no calls); the chunk with the call carries those of its last piece.
    fake.script(Reply(pieces=CALL_PIECES), Reply(pieces=CALL_PIECES))
    chunks = chat(tcall, stream=True, logprobs=True).lines()
    *pieces, done = chunks
    assert [[e["token"] for e in c["logprobs"]] for c in pieces] == [[p] for p in CALL_PIECES]
    [with_calls] = [c for c in pieces if c["message"].get("tool_calls")]
    held = [c["message"] for c in pieces if c is not with_calls]
    assert held == [{"role": "assistant", "content": ""}] * (len(CALL_PIECES) - 1)
    assert with_calls["logprobs"][0]["token"] == '{"city": "Paris"}}'
    assert "logprobs" not in done
    v = chat(tcall, logprobs=True).json()
    assert "".join(e["token"] for e in v["logprobs"]) == "".join(CALL_PIECES)
    assert v["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


def test_an_unparsed_call_stays_content_and_a_swallowed_one_is_an_empty_answer(tcall, fake):
    fenced = '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'
    fake.script(Reply(pieces=[fenced]), Reply(pieces=["<tool_call>", '{"name": "lookup", "arguments": {}}']))
    assert chat(tcall).json()["message"] == {"role": "assistant", "content": fenced}
    v = chat(tcall).json()
    assert v["message"] == {"role": "assistant", "content": ""} and v["eval_count"] == 2


def test_openai_chat_completions_with_tool_calls(tcall, fake):
    fake.script(Reply(pieces=CALL_PIECES), Reply(pieces=CALL_PIECES))
    body = {"model": TOOLS_MODEL, "messages": MSGS, "tools": TOOLS, "temperature": 0}
    v = tcall("POST", "/v1/chat/completions", body).json()
    choice = v["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    [c] = choice["message"]["tool_calls"]
    assert c["type"] == "function" and c["index"] == 0 and c["id"].startswith("call_")
    assert c["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    events = tcall("POST", "/v1/chat/completions", dict(body, stream=True)).events()
    deltas = [e[1]["choices"][0] for e in events if e[1] != "[DONE]"]
    assert [d["delta"]["tool_calls"][0]["function"]["name"] for d in deltas if d["delta"].get("tool_calls")] == [
        "get_weather"]
    assert deltas[-1]["finish_reason"] == "tool_calls" and events[-1][1] == "[DONE]"


def test_openai_history_with_calls_reaches_the_prompt(tcall, fake):
    fake.script(Reply(pieces=["It is sunny."]))
    msgs = MSGS + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}]
    v = tcall("POST", "/v1/chat/completions", {"model": TOOLS_MODEL, "messages": msgs, "tools": TOOLS}).json()
    assert v["choices"][0]["message"] == {"role": "assistant", "content": "It is sunny."}
    prompt = fake.completions()[0]["prompt"]
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city":"Paris"}}\n</tool_call>' in prompt
    assert "<tool_response>\n18 C\n</tool_response>" in prompt


def test_anthropic_messages_tool_use(tcall, fake):
    fake.script(Reply(pieces=CALL_PIECES), Reply(pieces=CALL_PIECES))
    body = {"model": TOOLS_MODEL, "max_tokens": 64, "messages": MSGS,
            "tools": [{"name": "get_weather", "input_schema": WEATHER["function"]["parameters"]}]}
    v = tcall("POST", "/v1/messages", body).json()
    assert v["stop_reason"] == "tool_use"
    assert [(b["type"], b["name"], b["input"]) for b in v["content"]] == [("tool_use", "get_weather", {"city": "Paris"})]
    events = tcall("POST", "/v1/messages", dict(body, stream=True)).events()
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    start = [d for n, d in events if n == "content_block_start"]
    assert [d["content_block"]["type"] for d in start] == ["tool_use"]
    delta = [d["delta"] for n, d in events if n == "content_block_delta"]
    assert json.loads(delta[0]["partial_json"]) == {"city": "Paris"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_responses_function_call(tcall, fake):
    fake.script(Reply(pieces=CALL_PIECES), Reply(pieces=CALL_PIECES))
    body = {"model": TOOLS_MODEL, "input": "Weather in Paris?",
            "tools": [{"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}]}
    v = tcall("POST", "/v1/responses", body).json()
    [item] = v["output"]
    assert item["type"] == "function_call" and item["name"] == "get_weather"
    assert json.loads(item["arguments"]) == {"city": "Paris"} and item["call_id"].startswith("call_")
    events = tcall("POST", "/v1/responses", dict(body, stream=True)).events()
    names = [n for n, _ in events]
    assert "response.function_call_arguments.done" in names and "response.output_text.delta" not in names
    done = events[-1][1]["response"]
    assert [o["type"] for o in done["output"]] == ["function_call"]
