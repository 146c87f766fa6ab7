"""POST /v1/messages (Anthropic's Messages API as Ollama serves it) against a fake llama-server."""

from __future__ import annotations

import pytest

from conftest import MODEL
from fake_llama import Reply

TOOLS_REFUSAL = "registry.ollama.ai/library/gemma3:270m does not support tools"
USER = [{"role": "user", "content": "hi"}]


def anthropic_error(r, status, etype, message):
    assert r.status == status, r.body
    v = r.json()
    assert list(v) == ["type", "error", "request_id"]
    assert v["type"] == "error" and v["error"] == {"type": etype, "message": message}
    assert v["request_id"].startswith("req_") and len(v["request_id"]) == 4 + 24


def test_a_whole_answer_is_one_message(call, fake):
    fake.script(Reply(pieces=["Bon", "jour"]))
    r = call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 12, "messages": USER})
    assert r.status == 200 and r.headers["content-type"] == "application/json" and r.body.endswith(b"}\n")
    v = r.json()
    assert list(v) == ["id", "type", "role", "model", "content", "stop_reason", "usage"]
    assert v["id"].startswith("msg_") and len(v["id"]) == 4 + 24
    assert (v["type"], v["role"], v["model"]) == ("message", "assistant", MODEL)
    assert v["content"] == [{"type": "text", "text": "Bonjour"}] and v["stop_reason"] == "end_turn"
    assert v["usage"]["output_tokens"] == 2 and v["usage"]["input_tokens"] > 0
    assert fake.completions()[0]["n_predict"] == 12


def test_stop_reasons_and_an_empty_answer(call, fake):
    fake.script(Reply(pieces=["a"], stop_type="limit"))
    assert call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 1, "messages": USER}).json()[
        "stop_reason"] == "max_tokens"
    fake.script(Reply(pieces=[]))
    v = call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 1, "messages": USER}).json()
    assert v["content"] is None and v["stop_reason"] == "end_turn"  # Go's nil slice


def test_a_stream_is_anthropics_event_sequence(call, fake):
    fake.script(Reply(pieces=["a", "b"]))
    r = call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 9, "stream": True,
                                      "system": "Be brief.", "messages": USER})
    assert r.status == 200 and r.headers["content-type"] == "text/event-stream"
    assert r.headers["cache-control"] == "no-cache"
    events = r.events()
    assert [name for name, _ in events] == ["message_start", "content_block_start", "content_block_delta",
                                            "content_block_delta", "content_block_stop", "message_delta",
                                            "message_stop"]
    assert all(data["type"] == name for name, data in events)
    start = events[0][1]["message"]
    assert list(start) == ["id", "type", "role", "model", "content", "usage"]
    assert start["content"] == [] and start["usage"] == {"input_tokens": (9 + 4 + 2) // 4, "output_tokens": 0}
    assert events[1][1] == {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    assert [d["delta"] for n, d in events if n == "content_block_delta"] == [
        {"type": "text_delta", "text": "a"}, {"type": "text_delta", "text": "b"}]
    delta = events[5][1]
    assert delta["delta"] == {"stop_reason": "end_turn"} and delta["usage"]["output_tokens"] == 2
    assert delta["usage"]["input_tokens"] > 3  # the real count replaces the estimate
    # Events are written from Go structs: fields in declaration order.
    assert r.body.decode().split("data: ")[1].startswith('{"type":"message_start","message":{"id":"msg_')


def test_system_blocks_history_and_options_reach_llama_server(call, fake):
    body = {"model": MODEL, "max_tokens": 7, "temperature": 0.2, "top_k": 5, "stop_sequences": ["END"],
            "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                                  {"type": "tool_use", "id": "t1", "name": "get_weather",
                                                   "input": {"city": "Paris"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
                                             {"type": "text", "text": "And?"}]},
            ]}
    assert call("POST", "/v1/messages", body).status == 200
    sent = fake.completions()[0]
    assert sent["prompt"] == ("<start_of_turn>user\nBe brief.<end_of_turn>\n"
                              "<start_of_turn>user\nWeather in Paris?<end_of_turn>\n"
                              "<start_of_turn>model\nLet me look.<end_of_turn>\n"
                              "<start_of_turn>user\nAnd?<end_of_turn>\n<start_of_turn>model\n")
    assert sent["n_predict"] == 7 and sent["top_k"] == 5 and sent["stop"] == ["END"]
    assert sent["temperature"] == pytest.approx(0.2)


@pytest.mark.parametrize("stream", [False, True])
def test_tools_are_refused_in_anthropic_shape(call, fake, stream):
    for tools in ([{"name": "get_weather", "input_schema": {"type": "object"}}],
                  [{"type": "web_search_20250305", "name": "web_search"}]):
        r = call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 5, "messages": USER, "tools": tools,
                                          "stream": stream})
        anthropic_error(r, 400, "invalid_request_error", TOOLS_REFUSAL)
        assert r.headers["content-type"] == "application/json" and r.body.endswith(b"\n")
    assert fake.completions() == []


def test_thinking_is_relaxed_not_refused(call, fake):
    for extra in ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, {"output_config": {"effort": "high"}}):
        r = call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 5, "messages": USER, **extra})
        assert r.status == 200 and r.json()["content"][0]["type"] == "text"


@pytest.mark.parametrize("body, message", [
    ("", "EOF"),
    ("[]", "json: cannot unmarshal array into Go value of type anthropic.MessagesRequest"),
    ({"max_tokens": 5, "messages": USER}, "model is required"),
    ({"model": MODEL, "messages": USER}, "max_tokens is required and must be positive"),
    ({"model": MODEL, "max_tokens": 5}, "messages is required"),
    ({"model": MODEL, "max_tokens": "5", "messages": USER},
     "json: cannot unmarshal string into Go struct field MessagesRequest.max_tokens of type int"),
    ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user"}]}, "unexpected end of JSON input"),
    ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": 5}]},
     "json: cannot unmarshal number into Go struct field MessagesRequest.messages of type []anthropic.ContentBlock"),
    ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
     "json: cannot unmarshal number into Go struct field MessagesRequest.messages.text of type string"),
    ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": 5}}]}]},
     "json: cannot unmarshal number into Go struct field MessagesRequest.messages.source.type of type string"),
    ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "tool_use"}]}]},
     "tool_use block missing required 'id' field"),
    ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "url", "url": "http://x/y.png"}}]}]},
     "invalid image source type: url. Only base64 images are supported."),
    ({"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "data": "ab$d"}}]}]},
     "invalid base64 image data: illegal base64 data at input byte 2"),
    ({"model": MODEL, "max_tokens": 5, "messages": USER, "tools": [{"name": "f", "input_schema": "x"}]},
     'invalid input_schema for tool "f": json: cannot unmarshal string into Go value of type '
     "api.ToolFunctionParameters"),
])
def test_binding_errors_are_gin_json_in_anthropic_shape(call, fake, body, message):
    r = call("POST", "/v1/messages", body)
    anthropic_error(r, 400, "invalid_request_error", message)
    assert r.headers["content-type"] == "application/json; charset=utf-8"
    assert fake.completions() == []


def test_model_and_runner_errors_come_through_the_writer(call, fake):
    r = call("POST", "/v1/messages", {"model": "llama3", "max_tokens": 5, "messages": USER})
    anthropic_error(r, 404, "not_found_error", "model 'llama3' not found")
    fake.script(Reply(status=503, body="loading model"))
    r = call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 5, "messages": USER, "stream": True})
    anthropic_error(r, 503, "overloaded_error", "loading model")
    fake.script(Reply(pieces=["a", "b", "c"], cut=2))
    events = call("POST", "/v1/messages", {"model": MODEL, "max_tokens": 5, "messages": USER,
                                           "stream": True}).events()
    assert events[-1][0] == "content_block_delta"  # the stream just ends, as Ollama's does
