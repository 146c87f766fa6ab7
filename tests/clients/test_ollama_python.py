"""ollama-python (the official client) through augur: no client change."""
import json

import ollama
import pytest
from conftest import OPS_KEY


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The name of the city

    Returns:
        The weather
    """
    return "sunny"


def get_time(zone: str) -> str:
    """Get the current time in a time zone.

    Args:
        zone: The IANA time zone

    Returns:
        The time
    """
    return "noon"


@pytest.fixture()
def client(stack):
    return ollama.Client(host=stack["url"])


def test_list_and_show(client):
    names = [m.model for m in client.list().models]
    assert "gemma3:latest" in names and "llama3.2:latest" in names
    show = client.show("gemma3")
    assert show.modelinfo is not None
    assert "tools" in show.capabilities  # augur emulates tools for gemma3


def test_chat_and_generate(client):
    r = client.chat(model="gemma3", messages=[{"role": "user", "content": "hi"}])
    assert r.message.role == "assistant" and r.message.content and r.done
    parts = list(client.chat(model="gemma3", messages=[{"role": "user", "content": "hi"}], stream=True))
    assert len(parts) > 2 and parts[-1].done and parts[-1].done_reason == "stop"
    assert "".join(p.message.content for p in parts) == r.message.content
    g = list(client.generate(model="gemma3", prompt="hi", stream=True))
    assert g[-1].done and g[-1].eval_count


def test_pull_progress(stack):
    # The model store needs the manage scope: anonymous callers are refused.
    with pytest.raises(ollama.ResponseError) as refused:
        list(ollama.Client(host=stack["url"]).pull("gemma3", stream=True))
    assert refused.value.status_code == 403 and "manage" in refused.value.error
    ops = ollama.Client(host=stack["url"], headers={"Authorization": f"Bearer {OPS_KEY}"})
    statuses = [p.status for p in ops.pull("gemma3", stream=True)]
    assert statuses[0] == "pulling manifest" and statuses[-1] == "success"
    assert any(s.startswith("pulling ") and s != "pulling manifest" for s in statuses)


def test_errors_are_response_errors_with_status(client):
    with pytest.raises(ollama.ResponseError) as e:
        client.chat(model="no-such-model", messages=[{"role": "user", "content": "x"}])
    assert e.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as e:
        client.chat(model="error-500", messages=[{"role": "user", "content": "x"}])
    assert e.value.status_code == 500
    with pytest.raises(ollama.ResponseError) as e:
        client.chat(model="gemma3", messages=[{"role": "user", "content": "x"}], format={"type": "foo"})
    assert e.value.status_code == 400


def test_tools_as_python_functions_on_a_tool_less_model(client):
    reply = '{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}'
    r = client.chat(model="tool-json", messages=[{"role": "user", "content": reply}], tools=[get_weather])
    assert r.message.tool_calls, r
    call = r.message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert call.function.arguments == {"city": "Paris"}


def test_a_full_turn_with_two_tool_results_as_the_readme_writes_it(client):
    two_calls = ('{"tool_calls":[{"name":"get_weather","arguments":{"city":"Lima"}},'
                 '{"name":"get_time","arguments":{"zone":"America/Lima"}}]}')
    available = {"get_weather": get_weather, "get_time": get_time}
    messages = [{"role": "user", "content": two_calls}]
    response = client.chat(model="tool-json", messages=messages, tools=list(available.values()))
    # The README's loop: the assistant turn once, then one result per call.
    if response.message.tool_calls:
        messages.append(response.message)
        for call in response.message.tool_calls:
            messages.append({"role": "tool", "tool_name": call.function.name,
                             "content": available[call.function.name](**call.function.arguments)})
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert [(m["tool_name"], m["content"]) for m in messages[2:]] == [("get_weather", "sunny"), ("get_time", "noon")]
    # The fake answers the last user text: ask for the answer the model would give.
    messages.append({"role": "user", "content": '{"response":"Sunny at noon in Lima."}'})
    r = client.chat(model="tool-json", messages=messages, tools=list(available.values()))
    assert r.message.content == "Sunny at noon in Lima." and not r.message.tool_calls


def test_tools_as_dicts_streaming(client):
    tool = {"type": "function", "function": {"name": "get_weather", "description": "weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    reply = '{"tool_call":{"name":"get_weather","arguments":{"city":"Rome"}}}'
    calls = []
    for part in client.chat(model="tool-json", messages=[{"role": "user", "content": reply}], tools=[tool], stream=True):
        calls.extend(part.message.tool_calls or [])
    assert [c.function.name for c in calls] == ["get_weather"]
    assert calls[0].function.arguments == {"city": "Rome"}


def test_plain_answer_with_tools_streams_text(client):
    reply = '{"response":"It is sunny today."}'
    text = "".join(
        p.message.content
        for p in client.chat(model="tool-json", messages=[{"role": "user", "content": reply}],
                             tools=[get_weather], stream=True)
    )
    assert text == "It is sunny today."


def test_json_type_format_is_normalized(client):
    r = client.chat(model="gemma3", messages=[{"role": "user", "content": "x"}], format={"type": "json"})
    assert isinstance(json.loads(r.message.content), dict)
