"""POST /v1/responses (OpenAI's Responses API as Ollama serves it) against a fake llama-server."""

from __future__ import annotations

import json

import pytest

from conftest import MODEL
from fake_llama import Reply

TOOLS_REFUSAL = "registry.ollama.ai/library/gemma3:270m does not support tools"
RESPONSE_KEYS = ["id", "object", "created_at", "completed_at", "status", "incomplete_details", "model",
                 "previous_response_id", "instructions", "output", "error", "tools", "tool_choice", "truncation",
                 "parallel_tool_calls", "text", "top_p", "presence_penalty", "frequency_penalty", "top_logprobs",
                 "temperature", "reasoning", "usage", "max_output_tokens", "max_tool_calls", "store", "background",
                 "service_tier", "metadata", "safety_identifier", "prompt_cache_key"]


def oai_error(r, status, message, etype="invalid_request_error"):
    assert r.status == status, r.body
    assert r.json() == {"error": {"message": message, "type": etype, "param": None, "code": None}}


def test_a_whole_answer_is_one_response_object(call, fake):
    fake.script(Reply(pieces=["Bon", "jour"]))
    r = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "temperature": 0.7, "max_output_tokens": 9})
    assert r.status == 200 and r.headers["content-type"] == "application/json" and r.body.endswith(b"}\n")
    v = r.json()
    assert list(v) == RESPONSE_KEYS
    assert v["id"].startswith("resp_") and v["object"] == "response" and v["status"] == "completed"
    assert v["model"] == MODEL and v["completed_at"] >= v["created_at"] > 0
    [item] = v["output"]
    assert item["id"].startswith("msg_") and item["type"] == "message" and item["role"] == "assistant"
    assert item["content"] == [{"type": "output_text", "text": "Bonjour", "annotations": [], "logprobs": []}]
    assert v["usage"]["output_tokens"] == 2 and v["usage"]["total_tokens"] == v["usage"]["input_tokens"] + 2
    assert v["usage"]["input_tokens_details"] == {"cached_tokens": 0}
    assert (v["temperature"], v["top_p"], v["max_output_tokens"], v["tools"]) == (0.7, 1, 9, [])
    assert b'"top_p":1,' in r.body and b'"temperature":0.7,' in r.body  # Go's float64 text
    sent = fake.completions()[0]
    assert sent["prompt"] == "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    assert sent["n_predict"] == 9 and sent["temperature"] == pytest.approx(0.7)


def test_a_stream_is_the_responses_event_sequence(call, fake):
    fake.script(Reply(pieces=["a", "b"]))
    r = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "stream": True})
    assert r.status == 200 and r.headers["content-type"] == "text/event-stream"
    assert r.headers["cache-control"] == "no-cache"
    events = r.events()
    assert [name for name, _ in events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done", "response.completed"]
    assert [data["sequence_number"] for _, data in events] == list(range(10))
    assert all(data["type"] == name for name, data in events)
    assert events[0][1]["response"]["status"] == "in_progress" and events[0][1]["response"]["output"] == []
    assert [data["delta"] for name, data in events if name.endswith(".delta")] == ["a", "b"]
    item_id = events[2][1]["item"]["id"]
    assert all(data["item_id"] == item_id for _, data in events[3:8])
    done = events[-1][1]["response"]
    assert done["status"] == "completed" and done["output"][0]["content"][0]["text"] == "ab"
    assert done["usage"]["output_tokens"] == 2 and done["completed_at"] is not None
    # Go writes these events from maps: every object's keys are sorted.
    first = r.body.decode().split("data: ", 2)[1]
    assert first.startswith('{"response":{"background":false,"completed_at":null,"created_at":')


def test_history_instructions_and_options_reach_llama_server(call, fake):
    body = {"model": MODEL, "instructions": "Be brief.", "top_p": 0.5, "input": [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is sunny."}]},
        {"type": "message", "role": "USER", "content": [{"type": "input_text", "text": "Thanks"},
                                                       {"type": "input_image", "image_url": "data:;base64,AAAA"}]},
    ]}
    assert call("POST", "/v1/responses", body).status == 200
    sent = fake.completions()[0]
    assert sent["prompt"] == ("<start_of_turn>user\nBe brief.<end_of_turn>\n"
                              "<start_of_turn>user\nWeather in Paris?<end_of_turn>\n"
                              "<start_of_turn>model\n<end_of_turn>\n"
                              "<start_of_turn>model\nIt is sunny.<end_of_turn>\n"
                              "<start_of_turn>user\nThanks<end_of_turn>\n<start_of_turn>model\n")
    assert sent["top_p"] == 0.5 and sent["temperature"] == 1 and sent["n_predict"] == 40960


def test_a_json_schema_format_is_sent_and_echoed_as_it_came(call, fake):
    schema = '{"type":"object","properties":{"b":{"type":"number","minimum":1.0},"a":{"type":"string"}}}'
    body = ('{"model":"%s","input":"x","text":{"format":{"type":"json_schema","name":"pet","schema":%s,'
            '"strict":true}}}' % (MODEL, schema))
    r = call("POST", "/v1/responses", body)
    assert r.status == 200
    assert ('"text":{"format":{"type":"json_schema","name":"pet","schema":%s,"strict":true}}' % schema
            ).encode() in r.body
    assert fake.completions()[0]["json_schema"] == json.loads(schema)


@pytest.mark.parametrize("stream", [False, True])
def test_tools_are_refused_in_openai_shape(call, fake, stream):
    for tool in ({"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
                 {"type": "web_search"},
                 {"type": "namespace", "name": "crm", "tools": [{"type": "function", "name": "find"}]}):
        r = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "tools": [tool], "stream": stream})
        oai_error(r, 400, TOOLS_REFUSAL)
        assert r.headers["content-type"] == "application/json" and r.body.endswith(b"\n")
    assert fake.completions() == []


def test_reasoning_effort_maps_to_thinking(call, fake):
    r = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "reasoning": {"effort": "minimal"}})
    oai_error(r, 400, '"gemma3:270m" does not support thinking')
    r = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "reasoning": {"effort": "huge"}})
    oai_error(r, 400, 'invalid reasoning value: "huge" (must be "minimal", "low", "medium", "high", "xhigh", '
                      '"ultra", "max", or "none")')
    r = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "reasoning": {"effort": "none"}})
    assert r.status == 200 and r.json()["reasoning"] == {"effort": "none"}


@pytest.mark.parametrize("body, message", [
    ("", "EOF"),
    ('{"model": ', "unexpected EOF"),
    ("[]", "json: cannot unmarshal array into Go value of type openai.ResponsesRequest"),
    ({"model": 5}, "json: cannot unmarshal number into Go struct field ResponsesRequest.model of type string"),
    ({"model": MODEL, "reasoning": {"effort": 1}},
     "json: cannot unmarshal number into Go struct field ResponsesReasoning.reasoning.effort of type string"),
    ({"model": MODEL, "tools": [{"name": 1}]},
     "json: cannot unmarshal number into Go struct field ResponsesTool.tools.name of type string"),
    ({"model": MODEL, "max_output_tokens": 1.5},
     "json: cannot unmarshal number 1.5 into Go struct field ResponsesRequest.max_output_tokens of type int"),
    ({"model": MODEL, "input": 5},
     "input must be a string or array: json: cannot unmarshal number into Go value of type []json.RawMessage"),
    ({"model": MODEL, "input": [{"type": "bogus"}]}, 'input[0]: unknown input item type: "bogus"'),
    ({"model": MODEL, "input": [{"content": "x"}]}, "input[0]: input item missing required 'type' field"),
    ({"model": MODEL, "input": [{"role": "user", "content": [{"type": "video"}]}]},
     "input[0]: content[0]: unknown content type: video"),
    ({"model": MODEL, "input": [{"role": "user", "content": 3}]},
     "input[0]: content must be a string or array: json: cannot unmarshal number into Go value of type "
     "[]json.RawMessage"),
    ({"model": MODEL, "input": [{"type": "function_call", "name": "f", "arguments": "{"}]},
     "failed to parse function call arguments: unexpected end of JSON input"),
    ({"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
     "file inputs are not currently supported"),
    ({"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y"}]}]},
     "image URLs are not currently supported, please use base64 encoded data instead"),
])
def test_binding_errors_are_gin_json_in_openai_shape(call, fake, body, message):
    r = call("POST", "/v1/responses", body)
    oai_error(r, 400, message)
    assert r.headers["content-type"] == "application/json; charset=utf-8"
    assert fake.completions() == []


def test_model_errors_come_from_the_chat_handler(call):
    oai_error(call("POST", "/v1/responses", {"input": "hi"}), 400, "model is required")
    oai_error(call("POST", "/v1/responses", {"model": "llama3", "input": "hi"}), 404, "model 'llama3' not found",
              "not_found_error")


def test_no_input_is_a_load_answer(call, fake):
    v = call("POST", "/v1/responses", {"model": MODEL}).json()
    assert v["status"] == "completed" and v["output"][0]["content"][0]["text"] == ""
    events = call("POST", "/v1/responses", {"model": MODEL, "stream": True}).events()
    assert [name for name, _ in events] == ["response.created", "response.in_progress", "response.completed"]
    assert events[-1][1]["response"]["output"] is None  # Go's nil slice
    assert fake.completions() == []


def test_runner_errors_before_and_during_a_stream(call, fake):
    fake.script(Reply(status=400, body="bad grammar"))
    r = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "stream": True})
    oai_error(r, 400, "bad grammar")
    fake.script(Reply(pieces=["a", "b", "c"], cut=2))
    events = call("POST", "/v1/responses", {"model": MODEL, "input": "hi", "stream": True}).events()
    assert events[-1][0] == "response.output_text.delta"  # the stream just ends, as Ollama's does


def test_zstd_bodies_are_refused_clearly(call):
    for path in ("/v1/responses", "/v1/chat/completions"):
        r = call("POST", path, b"\x28\xb5\x2f\xfd", headers={"Content-Encoding": "zstd"})
        oai_error(r, 400, "zstd request bodies are not supported by this Ollama front")
    r = call("POST", "/v1/messages", b"\x28\xb5\x2f\xfd", headers={"Content-Encoding": "zstd"})
    message = "zstd request bodies are not supported by this Ollama front"
    assert (r.status, r.json()["error"]["message"]) == (400, message)
