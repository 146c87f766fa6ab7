"""The openai SDK's Responses API (`client.responses.create`) pointed at augur's /v1:
function tools on a tool-less model (with the hosted `web_search` Codex declares),
and JSON mode.

The `tool-json` fake answers the last user text back as the model's output.
"""
import json

import openai
import pytest

TOOLS = [
    {"type": "function", "name": "get_weather", "description": "weather",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"type": "function", "name": "get_time", "description": "time",
     "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}},
]
ONE_CALL = '{"tool_call":{"name":"get_weather","arguments":{"city":"Lima"}}}'
TWO_CALLS = ('{"tool_calls":[{"name":"get_weather","arguments":{"city":"Lima"}},'
             '{"name":"get_time","arguments":{"zone":"America/Lima"}}]}')


@pytest.fixture()
def client(stack):
    return openai.OpenAI(base_url=stack["url"] + "/v1", api_key="ollama", max_retries=0)


def calls(output):
    return [(i.name, json.loads(i.arguments)) for i in output if i.type == "function_call"]


def test_plain_response_passes_through(client):
    r = client.responses.create(model="gemma3", input="hi")
    assert r.status == "completed" and r.output_text
    events = list(client.responses.create(model="gemma3", input="hi", stream=True))
    assert events[-1].type == "response.completed" and events[-1].response.output_text


def test_function_call(client):
    r = client.responses.create(model="tool-json", input=ONE_CALL, tools=TOOLS[:1])
    assert calls(r.output) == [("get_weather", {"city": "Lima"})]
    assert all(i.call_id for i in r.output if i.type == "function_call")


def test_parallel_function_calls_streamed(client):
    events = list(client.responses.create(model="tool-json", input=TWO_CALLS, tools=TOOLS, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert kinds.count("response.function_call_arguments.done") == 2
    assert calls(events[-1].response.output) == [("get_weather", {"city": "Lima"}),
                                                 ("get_time", {"zone": "America/Lima"})]


@pytest.mark.parametrize("choice", ["required", {"type": "function", "name": "get_weather"}])
def test_tool_choice_forces_a_call(client, choice):
    r = client.responses.create(model="tool-json", input=ONE_CALL, tools=TOOLS, tool_choice=choice)
    assert calls(r.output) == [("get_weather", {"city": "Lima"})]


def test_a_full_turn_with_the_function_output(client):
    first = client.responses.create(model="tool-json", input=ONE_CALL, tools=TOOLS[:1])
    [call] = [i for i in first.output if i.type == "function_call"]
    follow = [{"role": "user", "content": "Weather in Lima?"},
              {"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
              {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
              {"role": "user", "content": '{"response":"It is sunny in Lima."}'}]
    r = client.responses.create(model="tool-json", input=follow, tools=TOOLS[:1])
    assert r.status == "completed" and r.output_text == "It is sunny in Lima." and not calls(r.output)


def test_errors_in_openais_shape(client):
    with pytest.raises(openai.NotFoundError) as e:
        client.responses.create(model="no-such-model", input="hi", tools=TOOLS)
    assert e.value.body == {"message": "model 'no-such-model' not found", "type": "not_found_error",
                            "param": None, "code": None}
    with pytest.raises(openai.BadRequestError) as e:
        client.responses.create(model="tool-json", input="hi", tools=[{"type": "function", "name": "x",
                                                                       "parameters": "nope"}])
    assert e.value.body["type"] == "invalid_request_error" and "parameters" in e.value.body["message"]


def test_hosted_web_search_is_left_out_for_a_tool_less_model(client):
    raw = client.responses.with_raw_response.create(model="tool-json", input=ONE_CALL,
                                                    tools=TOOLS[:1] + [{"type": "web_search"}])
    assert raw.headers["x-augur-dropped-tools"] == "web_search"
    assert calls(raw.parse().output) == [("get_weather", {"city": "Lima"})]


def test_json_mode_is_repaired(client):
    r = client.responses.create(model="bad-json", input="Why is the sky blue? JSON please.",
                                text={"format": {"type": "json_object"}})
    assert isinstance(json.loads(r.output_text), dict)
    events = list(client.responses.create(model="gemma3", input="JSON please.",
                                          text={"format": {"type": "json_object"}}, stream=True))
    assert isinstance(json.loads(events[-1].response.output_text), dict)
