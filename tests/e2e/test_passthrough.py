"""Ollama and OpenAI clients against real Gemma 3 270M through augur.

The model is a small base model: assertions are about the protocol (shapes,
done chunks, counts, parseable JSON), never about wording.
"""

import json

import httpx
import ollama
import openai
import pytest

OPTS = {"temperature": 0, "seed": 42, "num_predict": 16}
MESSAGES = [{"role": "user", "content": "Name three colours."}]
# Fields that legitimately differ between two runs of the same request.
VOLATILE = {"created_at", "total_duration", "load_duration", "prompt_eval_duration", "eval_duration"}


@pytest.fixture(scope="module")
def client(augur_url):
    return ollama.Client(host=augur_url, timeout=120)


@pytest.fixture(scope="module")
def oai(augur_url):
    return openai.OpenAI(base_url=augur_url + "/v1", api_key="x", max_retries=0, timeout=120)


def assert_done(resp):
    assert resp.done is True
    assert resp.done_reason in ("stop", "length")
    assert resp.eval_count and resp.eval_count > 0
    assert resp.prompt_eval_count and resp.prompt_eval_count > 0
    assert resp.total_duration and resp.total_duration > 0


def test_root_and_version(augur_url):
    r = httpx.get(augur_url + "/")
    assert r.status_code == 200 and r.text == "Ollama is running"
    r = httpx.get(augur_url + "/api/version")
    assert r.status_code == 200 and r.json()["version"]


def test_list(client, model_name):
    models = client.list().models
    assert model_name in [m.model for m in models]
    entry = next(m for m in models if m.model == model_name)
    assert entry.details.family == "gemma3" and entry.size > 0 and entry.digest


def test_show(client, model_name, front_url):
    info = client.show(model_name)
    assert info.modelinfo and info.modelinfo["general.architecture"] == "gemma3"
    assert "completion" in info.capabilities  # augur may add "tools" when it emulates them
    assert "<start_of_turn>" in info.template
    direct = ollama.Client(host=front_url).show(model_name)
    assert direct.capabilities == ["completion"]


def test_chat(client, model_name):
    resp = client.chat(model_name, messages=MESSAGES, options=OPTS)
    assert resp.model == model_name and resp.message.role == "assistant"
    assert isinstance(resp.message.content, str)
    assert_done(resp)
    assert resp.eval_count <= OPTS["num_predict"]


def test_chat_stream(client, model_name):
    parts = list(client.chat(model_name, messages=MESSAGES, options=OPTS, stream=True))
    assert len(parts) >= 2
    assert all(not p.done for p in parts[:-1]) and all(p.message.content for p in parts[:-1])
    assert parts[-1].message.content == ""
    assert_done(parts[-1])
    assert len(parts) - 1 <= parts[-1].eval_count


def test_chat_stream_ndjson_lines(augur_url, model_name):
    body = {"model": model_name, "messages": MESSAGES, "options": OPTS}
    with httpx.stream("POST", augur_url + "/api/chat", json=body, timeout=120) as r:
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/x-ndjson"
        lines = list(r.iter_lines())
    assert lines and all(line for line in lines), "blank NDJSON line"
    chunks = [json.loads(line) for line in lines]
    assert list(chunks[0]) == ["model", "created_at", "message", "done"]
    assert chunks[-1]["done"] is True and chunks[-1]["done_reason"] in ("stop", "length")
    assert not any(c["done"] for c in chunks[:-1])


def test_generate(client, model_name):
    resp = client.generate(model_name, prompt="The capital of France is", options=OPTS)
    assert isinstance(resp.response, str) and resp.response
    assert resp.context and all(isinstance(t, int) for t in resp.context)
    assert_done(resp)


def test_generate_stream(client, model_name):
    parts = list(client.generate(model_name, prompt="Once upon a time", options=OPTS, stream=True))
    assert all(not p.done for p in parts[:-1])
    assert_done(parts[-1])
    assert parts[-1].context


def test_chat_format_schema(client, model_name):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}},
              "required": ["city"]}
    messages = [{"role": "user", "content": 'Answer in JSON like {"city": "Rome"}. Which city is the capital of France?'}]
    resp = client.chat(model_name, messages=messages, format=schema,
                       options={"temperature": 0, "seed": 42, "num_predict": 64})
    assert_done(resp)
    data = json.loads(resp.message.content)
    assert isinstance(data, dict) and isinstance(data["city"], str) and len(data["city"]) <= 24


def test_unknown_model(client):
    with pytest.raises(ollama.ResponseError) as e:
        client.chat("nope:1b", messages=MESSAGES)
    assert e.value.status_code == 404 and e.value.error == "model 'nope:1b' not found"
    with pytest.raises(ollama.ResponseError) as e:
        client.show("nope")
    assert e.value.status_code == 404 and e.value.error == "model 'nope:latest' not found"


def test_openai_models(oai, model_name):
    assert model_name in [m.id for m in oai.models.list()]


def test_openai_chat(oai, model_name):
    resp = oai.chat.completions.create(model=model_name, messages=MESSAGES, max_tokens=16, temperature=0, seed=42)
    assert resp.object == "chat.completion" and resp.model == model_name
    choice = resp.choices[0]
    assert choice.message.role == "assistant" and isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert resp.usage.completion_tokens > 0 and resp.usage.prompt_tokens > 0


def test_openai_chat_stream(oai, model_name):
    chunks = list(oai.chat.completions.create(model=model_name, messages=MESSAGES, max_tokens=16, temperature=0,
                                              seed=42, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] in ("stop", "length") and not any(finishes[:-1])
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens > 0
    assert len({c.id for c in chunks}) == 1 and len({c.created for c in chunks}) == 1


def _strip(obj):
    return {k: v for k, v in obj.items() if k not in VOLATILE}


@pytest.mark.parametrize("path,body", [
    ("/api/chat", {"messages": MESSAGES}),
    ("/api/generate", {"prompt": "The capital of France is"}),
])
def test_same_bytes_direct_and_through_augur(front_url, augur_url, model_name, path, body):
    body = dict(body, model=model_name, stream=False, options=OPTS)
    with httpx.Client(timeout=120) as http:
        http.post(front_url + path, json=body)  # warm the prompt cache so both runs below see the same state
        direct = http.post(front_url + path, json=body)
        proxied = http.post(augur_url + path, json=body)
    assert direct.status_code == proxied.status_code == 200
    assert direct.headers["content-type"] == proxied.headers["content-type"]
    d, p = direct.json(), proxied.json()
    assert list(d) == list(p), "field order differs"
    assert _strip(d) == _strip(p)
    assert not direct.content.endswith(b"\n") and not proxied.content.endswith(b"\n")


def _sse_events(text):
    return [e for e in text.split("\n\n") if e]


def _token_sum(admin_url, model, kind):
    text = httpx.get(admin_url + "/metrics").text
    total = 0.0
    for line in text.splitlines():
        if (line.startswith("gen_ai_client_token_usage_sum{")
                and f'gen_ai_request_model="{model}"' in line
                and f'gen_ai_token_type="{kind}"' in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_openai_stream_tokens_are_counted_without_changing_the_stream(
    augur_url, front_url, admin_url, model_name
):
    """A stream whose client did not ask for usage: the upstream is asked,
    the usage event is read and left out, and the client gets the events the
    upstream sends such a client (ids and times aside)."""
    body = {"model": model_name, "stream": True, "messages": MESSAGES,
            "temperature": 0, "seed": 42, "max_tokens": 16}
    before = _token_sum(admin_url, model_name, "output")
    through = httpx.post(augur_url + "/v1/chat/completions", json=body, timeout=120)
    direct = httpx.post(front_url + "/v1/chat/completions", json=body, timeout=120)
    assert through.status_code == direct.status_code == 200
    mine, theirs = _sse_events(through.text), _sse_events(direct.text)
    assert mine[-1] == theirs[-1] == "data: [DONE]"
    assert len(mine) == len(theirs), (mine, theirs)
    volatile = {"id", "created"}
    for a, b in zip(mine[:-1], theirs[:-1]):
        a, b = json.loads(a[len("data: "):]), json.loads(b[len("data: "):])
        assert {k: v for k, v in a.items() if k not in volatile} == \
            {k: v for k, v in b.items() if k not in volatile}
    assert not any('"usage"' in e for e in mine)
    assert _token_sum(admin_url, model_name, "output") > before

    # A client that asks for usage gets its usage event.
    body["stream_options"] = {"include_usage": True}
    asked = _sse_events(httpx.post(augur_url + "/v1/chat/completions", json=body, timeout=120).text)
    usage = [json.loads(e[len("data: "):]) for e in asked[:-1] if '"usage"' in e]
    assert len(usage) == 1 and usage[0]["choices"] == [] and usage[0]["usage"]["completion_tokens"] > 0
