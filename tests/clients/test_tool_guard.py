"""The official SDKs against the tool-call guard: a call to an address
inside the network is refused in each SDK's own error type, and a call
that passes is an ordinary tool call. The `tool-json` fake answers the
user's text as the model's output."""
import json

import anthropic
import openai
import pytest

FETCH = {"type": "function", "function": {"name": "fetch_url", "description": "Fetch a page",
         "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}}


def call(url):
    return json.dumps({"tool_call": {"name": "fetch_url", "arguments": {"url": url}}})


def test_openai_sdk_sees_a_refusal_and_a_clean_call(stack):
    client = openai.OpenAI(base_url=stack["url"] + "/v1", api_key="ollama", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError) as e:
        client.chat.completions.create(model="tool-json", tools=[FETCH],
                                       messages=[{"role": "user", "content": call("http://169.254.169.254/")}])
    assert "refused by policy" in str(e.value)
    assert "169.254" not in str(e.value)
    r = client.chat.completions.create(model="tool-json", tools=[FETCH],
                                       messages=[{"role": "user", "content": call("https://example.com/a")}])
    tc = r.choices[0].message.tool_calls[0]
    assert tc.function.name == "fetch_url"
    assert json.loads(tc.function.arguments) == {"url": "https://example.com/a"}


def test_anthropic_sdk_sees_a_refusal(stack):
    client = anthropic.Anthropic(base_url=stack["url"], api_key="ollama", max_retries=0)
    tool = {"name": "fetch_url", "description": "Fetch a page",
            "input_schema": FETCH["function"]["parameters"]}
    with pytest.raises(anthropic.UnprocessableEntityError) as e:
        client.messages.create(model="tool-json", max_tokens=128, tools=[tool],
                               messages=[{"role": "user", "content": call("http://0177.1/")}])
    assert "refused by policy" in str(e.value)
    m = client.messages.create(model="tool-json", max_tokens=128, tools=[tool],
                               messages=[{"role": "user", "content": call("https://example.com/b")}])
    block = next(b for b in m.content if b.type == "tool_use")
    assert block.input == {"url": "https://example.com/b"}
