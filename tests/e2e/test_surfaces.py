"""OpenAI's Responses API and Anthropic's Messages API through augur, with the
official SDKs, against real Gemma 3 270M.

augur forwards both surfaces to the upstream, which answers them as Ollama
does. The model is a small base model: assertions are about the protocol
(shapes, events, counts), never about wording.
"""

import anthropic
import httpx
import openai
import pytest

MAX_TOKENS = 16
# The anthropic SDK no longer takes sampling parameters as arguments; Ollama still reads them.
GREEDY = {"temperature": 0}
QUESTION = "Name three colours."
TOOLS_REFUSAL = "does not support tools"
WEATHER = {"name": "get_weather", "description": "Get the current weather for a city",
           "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def oai(augur_url):
    return openai.OpenAI(base_url=augur_url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def claude(augur_url):
    return anthropic.Anthropic(base_url=augur_url, api_key="unused", max_retries=0, timeout=120)


def test_responses_whole_answer(oai, model_name):
    r = oai.responses.create(model=model_name, input=QUESTION, instructions="Answer briefly.",
                             max_output_tokens=MAX_TOKENS, temperature=0)
    assert r.id.startswith("resp_") and r.object == "response" and r.status == "completed"
    assert r.model == model_name and r.instructions == "Answer briefly." and r.max_output_tokens == MAX_TOKENS
    [item] = r.output
    assert item.type == "message" and item.role == "assistant" and item.status == "completed"
    assert item.content[0].type == "output_text" and r.output_text == item.content[0].text
    assert 0 < r.usage.output_tokens <= MAX_TOKENS and r.usage.input_tokens > 0
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens


def test_responses_stream(oai, model_name):
    events = list(oai.responses.create(model=model_name, input=[{"role": "user", "content": QUESTION}],
                                       max_output_tokens=MAX_TOKENS, temperature=0, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                          "response.completed"]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert deltas and len(deltas) <= MAX_TOKENS
    done = events[-1].response
    assert done.status == "completed" and done.output_text == "".join(deltas)
    assert 0 < done.usage.output_tokens <= MAX_TOKENS


def test_messages_whole_answer(claude, model_name):
    m = claude.messages.create(model=model_name, max_tokens=MAX_TOKENS, system="Answer briefly.",
                               extra_body=GREEDY, messages=[{"role": "user", "content": QUESTION}])
    assert m.id.startswith("msg_") and m.type == "message" and m.role == "assistant" and m.model == model_name
    assert [b.type for b in m.content] == ["text"] and m.content[0].text
    assert m.stop_reason in ("end_turn", "max_tokens")
    assert 0 < m.usage.output_tokens <= MAX_TOKENS and m.usage.input_tokens > 0


def test_messages_stream(claude, model_name):
    with claude.messages.stream(model=model_name, max_tokens=MAX_TOKENS, extra_body=GREEDY,
                                messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}]}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert text and final.content[0].text == text
    assert final.stop_reason in ("end_turn", "max_tokens")
    assert 0 < final.usage.output_tokens <= MAX_TOKENS


def test_messages_thinking_is_dropped_for_a_model_without_it(claude, model_name):
    m = claude.messages.create(model=model_name, max_tokens=MAX_TOKENS, extra_body=GREEDY,
                               thinking={"type": "enabled", "budget_tokens": 1024},
                               messages=[{"role": "user", "content": QUESTION}])
    assert [b.type for b in m.content] == ["text"]


@pytest.mark.tools_not_emulated_yet
@pytest.mark.parametrize("stream", [False, True])
def test_responses_tools_get_the_upstream_refusal_until_augur_emulates_them(oai, augur_url, model_name, stream):
    """Today augur forwards Responses tools, and gemma3 refuses them as Ollama does.
    When augur emulates tools on /v1/responses, this becomes a tool-call test."""
    tool = {"type": "function", "name": WEATHER["name"], "description": WEATHER["description"],
            "parameters": WEATHER["schema"]}
    with pytest.raises(openai.BadRequestError) as e:
        oai.responses.create(model=model_name, input="Weather in Paris?", tools=[tool], stream=stream,
                             max_output_tokens=MAX_TOKENS)
    assert TOOLS_REFUSAL in e.value.message
    r = httpx.post(augur_url + "/v1/responses", timeout=120, json={
        "model": model_name, "input": "Weather in Paris?", "tools": [tool], "stream": stream})
    assert r.status_code == 400 and r.headers["content-type"] == "application/json"
    assert r.json() == {"error": {"message": "registry.ollama.ai/library/gemma3:270m does not support tools",
                                  "type": "invalid_request_error", "param": None, "code": None}}


@pytest.mark.tools_not_emulated_yet
@pytest.mark.parametrize("stream", [False, True])
def test_messages_tools_get_the_upstream_refusal_until_augur_emulates_them(claude, augur_url, model_name, stream):
    """Today augur forwards Messages tools, and gemma3 refuses them as Ollama does.
    When augur emulates tools on /v1/messages, this becomes a tool_use test."""
    tool = {"name": WEATHER["name"], "description": WEATHER["description"], "input_schema": WEATHER["schema"]}
    with pytest.raises(anthropic.BadRequestError) as e:
        claude.messages.create(model=model_name, max_tokens=MAX_TOKENS, tools=[tool], stream=stream,
                               messages=[{"role": "user", "content": "Weather in Paris?"}])
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "invalid_request_error"
    assert TOOLS_REFUSAL in e.value.body["error"]["message"]
    r = httpx.post(augur_url + "/v1/messages", timeout=120, json={
        "model": model_name, "max_tokens": MAX_TOKENS, "tools": [tool], "stream": stream,
        "messages": [{"role": "user", "content": "Weather in Paris?"}]})
    assert r.status_code == 400 and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["error"] == {"type": "invalid_request_error",
                             "message": "registry.ollama.ai/library/gemma3:270m does not support tools"}
    assert body["type"] == "error" and body["request_id"].startswith("req_")
