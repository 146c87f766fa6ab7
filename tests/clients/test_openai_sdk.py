"""The openai SDK pointed at augur's /v1: tools on a tool-less model."""
import json

import openai
import pytest

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "weather",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture()
def client(stack):
    return openai.OpenAI(base_url=stack["url"] + "/v1", api_key="ollama")


def test_plain_chat_passes_through(client):
    r = client.chat.completions.create(model="gemma3", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content
    chunks = list(client.chat.completions.create(model="gemma3", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_tool_calls(client):
    reply = '{"tool_call":{"name":"get_weather","arguments":{"city":"Lima"}}}'
    r = client.chat.completions.create(model="tool-json", messages=[{"role": "user", "content": reply}], tools=TOOLS)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.type == "function" and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Lima"}


def test_tool_calls_streaming(client):
    reply = '{"tool_call":{"name":"get_weather","arguments":{"city":"Lima"}}}'
    stream = client.chat.completions.create(model="tool-json", messages=[{"role": "user", "content": reply}],
                                            tools=TOOLS, stream=True)
    names, args, finish = [], "", None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        for tc in delta.tool_calls or []:
            if tc.function.name:
                names.append(tc.function.name)
            args += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert names == ["get_weather"] and json.loads(args) == {"city": "Lima"} and finish == "tool_calls"


def test_response_format_json_schema(client):
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name", "age"]}
    r = client.chat.completions.create(
        model="gemma3", messages=[{"role": "user", "content": "x"}],
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}},
    )
    value = json.loads(r.choices[0].message.content)
    assert isinstance(value["name"], str) and isinstance(value["age"], int)
