"""OpenAI's Responses API and Anthropic's Messages API through augur, with the
official SDKs, against real Gemma 3 270M.

augur forwards both surfaces to the upstream, which answers them as Ollama
does, and emulates what the model lacks: tools and thinking. The model is a small base model: assertions are about the protocol
(shapes, events, counts), never about wording.
"""

import json

import anthropic
import openai
import pytest

MAX_TOKENS = 16
# Room for a tool envelope or a thinking object around the answer.
TOOL_TOKENS = 160
# The anthropic SDK no longer takes sampling parameters as arguments; Ollama still reads them.
GREEDY = {"temperature": 0}
QUESTION = "Name three colours."
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


def test_messages_thinking_is_emulated_for_a_model_without_it(claude, model_name):
    m = claude.messages.create(model=model_name, max_tokens=TOOL_TOKENS, extra_body=GREEDY,
                               thinking={"type": "enabled", "budget_tokens": 1024},
                               messages=[{"role": "user", "content": QUESTION}])
    kinds = [b.type for b in m.content]
    assert kinds in (["thinking", "text"], ["text"]), kinds
    assert m.content[-1].text and m.stop_reason in ("end_turn", "max_tokens")
    if kinds[0] == "thinking":
        assert isinstance(m.content[0].thinking, str)


def _tool_items(output):
    return [item for item in output if item.type == "function_call"]


@pytest.mark.parametrize("stream", [False, True])
def test_responses_tools_are_emulated_as_function_calls(oai, model_name, stream):
    """gemma3 refuses tools (see test_features); through augur a required choice yields a real call."""
    tool = {"type": "function", "name": WEATHER["name"], "description": WEATHER["description"],
            "parameters": WEATHER["schema"]}
    args = dict(model=model_name, input="What is the weather in Paris?", tools=[tool], tool_choice="required",
                max_output_tokens=TOOL_TOKENS, temperature=0)
    if stream:
        events = list(oai.responses.create(stream=True, **args))
        kinds = [e.type for e in events]
        assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
        assert [e.sequence_number for e in events] == list(range(len(events)))
        assert "response.function_call_arguments.done" in kinds
        r = events[-1].response
    else:
        r = oai.responses.create(**args)
    assert r.status == "completed"
    calls = _tool_items(r.output)
    assert calls and {c.name for c in calls} == {WEATHER["name"]}
    for c in calls:
        assert c.call_id and isinstance(json.loads(c.arguments)["city"], str)
    # The call's result goes back as a function_call_output; the conversation then continues.
    follow = [{"role": "user", "content": "What is the weather in Paris?"}]
    follow += [{"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
               for c in calls]
    follow += [{"type": "function_call_output", "call_id": c.call_id, "output": "Sunny, 22 C"} for c in calls]
    r2 = oai.responses.create(model=model_name, input=follow, tools=[tool], max_output_tokens=TOOL_TOKENS,
                              temperature=0)
    assert r2.status in ("completed", "incomplete") and r2.output


@pytest.mark.parametrize("stream", [False, True])
def test_messages_tools_are_emulated_as_tool_use(claude, model_name, stream):
    """gemma3 refuses tools (see test_features); through augur tool_choice any yields a real tool_use."""
    tool = {"name": WEATHER["name"], "description": WEATHER["description"], "input_schema": WEATHER["schema"]}
    question = [{"role": "user", "content": "What is the weather in Paris?"}]
    args = dict(model=model_name, max_tokens=TOOL_TOKENS, tools=[tool], tool_choice={"type": "any"},
                extra_body=GREEDY, messages=question)
    if stream:
        with claude.messages.stream(**args) as s:
            kinds = [e.type for e in s]
            m = s.get_final_message()
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert "content_block_start" in kinds and "input_json" in kinds
    else:
        m = claude.messages.create(**args)
    assert m.stop_reason == "tool_use"
    uses = [b for b in m.content if b.type == "tool_use"]
    assert uses and {u.name for u in uses} == {WEATHER["name"]}
    for u in uses:
        assert u.id and isinstance(u.input["city"], str)  # ids as Ollama gives them (call_...)
    # The tool_result goes back in a user turn; the conversation then continues.
    history = question + [{"role": "assistant", "content": m.content},
                          {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id,
                                                        "content": "Sunny, 22 C"} for u in uses]}]
    m2 = claude.messages.create(model=model_name, max_tokens=TOOL_TOKENS, tools=[tool], extra_body=GREEDY,
                                messages=history)
    assert m2.stop_reason in ("end_turn", "max_tokens", "tool_use") and m2.content
