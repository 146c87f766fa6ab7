"""The anthropic SDK pointed at augur: Messages API tools on a tool-less model,
and structured outputs (`messages.parse`, `output_format=`).

The `tool-json` fake answers the last user text back as the model's output, so
each test decides what the model "writes" (a tool envelope or an answer).
`bad-json` answers a format in code fences with a trailing comma, and
`invalid-then-valid` first misses a required field.
"""
import anthropic
import pydantic
import pytest

TOOLS = [
    {"name": "get_weather", "description": "weather",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    {"name": "get_time", "description": "time",
     "input_schema": {"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}},
]
ONE_CALL = '{"tool_call":{"name":"get_weather","arguments":{"city":"Lima"}}}'
TWO_CALLS = ('{"tool_calls":[{"name":"get_weather","arguments":{"city":"Lima"}},'
             '{"name":"get_time","arguments":{"zone":"America/Lima"}}]}')


@pytest.fixture()
def client(stack):
    return anthropic.Anthropic(base_url=stack["url"], api_key="unused", max_retries=0)


def ask(text):
    return [{"role": "user", "content": text}]


def test_plain_messages_pass_through(client):
    m = client.messages.create(model="gemma3", max_tokens=32, messages=ask("hi"))
    assert m.type == "message" and m.content[0].type == "text" and m.content[0].text
    with client.messages.stream(model="gemma3", max_tokens=32, messages=ask("hi")) as s:
        text = "".join(s.text_stream)
    assert text


def test_tool_use(client):
    m = client.messages.create(model="tool-json", max_tokens=256, tools=TOOLS[:1], messages=ask(ONE_CALL))
    assert m.stop_reason == "tool_use"
    [use] = m.content
    assert use.type == "tool_use" and use.name == "get_weather" and use.input == {"city": "Lima"} and use.id


def test_parallel_tool_use_streamed(client):
    with client.messages.stream(model="tool-json", max_tokens=256, tools=TOOLS, messages=ask(TWO_CALLS)) as s:
        kinds = [e.type for e in s]
        m = s.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "input_json" in kinds
    assert m.stop_reason == "tool_use"
    assert [(b.type, b.name, b.input) for b in m.content] == [
        ("tool_use", "get_weather", {"city": "Lima"}), ("tool_use", "get_time", {"zone": "America/Lima"})]
    assert len({b.id for b in m.content}) == 2


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}])
def test_tool_choice_forces_a_call(client, choice):
    m = client.messages.create(model="tool-json", max_tokens=256, tools=TOOLS, tool_choice=choice,
                               messages=ask(ONE_CALL))
    assert m.stop_reason == "tool_use" and m.content[0].name == "get_weather"


def test_a_full_turn_with_the_tool_result(client):
    first = client.messages.create(model="tool-json", max_tokens=256, tools=TOOLS[:1], messages=ask(ONE_CALL))
    [use] = first.content
    history = ask("Weather in Lima?") + [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"},
                                     {"type": "text", "text": '{"response":"It is sunny in Lima."}'}]},
    ]
    m = client.messages.create(model="tool-json", max_tokens=256, tools=TOOLS[:1], messages=history)
    assert m.stop_reason == "end_turn" and [b.type for b in m.content] == ["text"]
    assert m.content[0].text == "It is sunny in Lima."


def test_errors_in_anthropics_shape(client):
    with pytest.raises(anthropic.NotFoundError) as e:
        client.messages.create(model="no-such-model", max_tokens=16, tools=TOOLS, messages=ask("hi"))
    assert e.value.body["type"] == "error" and e.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="tool-json", max_tokens=16, tools=[{"name": "x", "input_schema": "nope"}],
                               messages=ask("hi"))
    assert e.value.body["error"]["type"] == "invalid_request_error"


class Person(pydantic.BaseModel):
    name: str
    age: int


@pytest.mark.parametrize("model", ["bad-json", "invalid-then-valid"])
def test_messages_parse_gets_valid_json(client, model):
    # Neither model's first answer parses as a Person: augur repairs or asks again.
    m = client.messages.parse(model=model, max_tokens=256, output_format=Person, messages=ask("Who?"))
    assert m.stop_reason == "end_turn" and [b.type for b in m.content] == ["text"]
    assert m.parsed_output == Person(name="x", age=1)


def test_beta_messages_parse_and_streamed_structured_output(client):
    m = client.beta.messages.parse(model="bad-json", max_tokens=256, output_format=Person, messages=ask("Who?"))
    assert m.parsed_output == Person(name="x", age=1)
    with client.messages.stream(model="bad-json", max_tokens=256, output_format=Person, messages=ask("Who?")) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    assert Person.model_validate_json(text) == Person(name="x", age=1)
    assert final.parsed_output == Person(name="x", age=1)
