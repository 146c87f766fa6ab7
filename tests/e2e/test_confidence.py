"""Confidence on the real model: the 270M model's own token probabilities,
passed through by the Ollama front in Ollama's shape, scored by augur and
acted on.

Two augurs in front of the session's upstream:
  scored   `confidence: {threshold: 0.5}` and `tools.small_model: auto`;
  routed   `fallback.when.confidence_below: 1.0` to the tool-capable model
           the same front serves: every answer short of certainty goes on.
"""
import json
import re

import httpx
import pytest

from conftest import Service, _free_port
from test_upstreams import _augur_bin

OPTS = {"temperature": 0, "seed": 42, "num_predict": 256}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Current local time in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
QUESTION = [{"role": "user", "content": "What time is it in London, New York and Tokyo?"}]


def _start(name, policy, front_url, log_dir, tmp_path_factory):
    policies = tmp_path_factory.mktemp(name + "-policies")
    (policies / "confidence.yaml").write_text(json.dumps(policy))  # JSON is YAML
    listen, admin = _free_port(), _free_port()
    svc = Service(name, [_augur_bin(), "--listen", "127.0.0.1:%d" % listen, "--admin-listen",
                         "127.0.0.1:%d" % admin, "--upstream", front_url, "--policies", policies], log_dir)
    svc.wait_ready("http://127.0.0.1:%d/-/ready" % admin, 30)
    return svc, {"url": "http://127.0.0.1:%d" % listen, "admin": "http://127.0.0.1:%d" % admin}


@pytest.fixture(scope="module")
def augurs(front_url, model_name, tools_model_name, log_dir, tmp_path_factory):
    services = []
    try:
        svc, scored = _start("augur-scored", {"models": {model_name: {
            "confidence": {"threshold": 0.5}, "tools": {"small_model": "auto"}}}},
            front_url, log_dir, tmp_path_factory)
        services.append(svc)
        svc, routed = _start("augur-routed", {"models": {model_name: {
            "fallback": {"models": [tools_model_name], "when": {"confidence_below": 1.0}}}}},
            front_url, log_dir, tmp_path_factory)
        services.append(svc)
        yield {"scored": scored, "routed": routed}
    finally:
        for svc in reversed(services):
            svc.stop()


def _chat(augur, model, **extra):
    body = {"model": model, "messages": QUESTION, "tools": [WEATHER, TIME], "stream": False,
            "options": OPTS, **extra}
    return httpx.post(augur["url"] + "/api/chat", json=body, timeout=300)


def test_a_whole_answer_carries_the_models_confidence_and_no_probabilities(augurs, model_name):
    r = _chat(augurs["scored"], model_name)
    assert r.status_code == 200, r.text
    confidence = float(r.headers["x-augur-confidence"])
    assert 0.0 <= confidence <= 1.0
    calls = r.json()["message"].get("tool_calls") or []
    listed = [c for c in r.headers.get("x-augur-confidence-calls", "").split(",") if c.strip()]
    assert len(listed) == len(calls), (r.headers, calls)
    for entry, call in zip(listed, calls):
        name, value = entry.strip().split("=")
        assert name == call["function"]["name"] and 0.0 <= float(value) <= 1.0
    if confidence < 0.5:
        assert r.headers["x-augur-confidence-below"] == "0.5"
    # Asked for by augur, not by the client: taken out again.
    assert "logprobs" not in r.json()
    metrics = httpx.get(augurs["scored"]["admin"] + "/metrics", timeout=10).text
    assert re.search(r'^augur_confidence_count\{[^}]*model="%s"' % re.escape(model_name), metrics, re.M)


def test_the_client_that_asks_for_probabilities_gets_them_as_ollama_sends_them(augurs, model_name):
    r = _chat(augurs["scored"], model_name, logprobs=True, top_logprobs=2)
    assert r.status_code == 200, r.text
    logprobs = r.json()["logprobs"]
    assert logprobs and all(isinstance(t["logprob"], float) and "token" in t for t in logprobs)
    assert all(len(t.get("top_logprobs", [])) <= 2 for t in logprobs)


def test_a_stream_says_its_confidence_in_the_done_chunk(augurs, model_name):
    body = {"model": model_name, "messages": QUESTION, "tools": [WEATHER, TIME], "stream": True,
            "options": OPTS}
    with httpx.stream("POST", augurs["scored"]["url"] + "/api/chat", json=body, timeout=300) as r:
        assert r.status_code == 200
        lines = [json.loads(line) for line in r.iter_lines() if line.strip()]
    done = lines[-1]
    assert done["done"] is True, done
    assert 0.0 <= done["augur_confidence"] <= 1.0
    assert all("logprobs" not in line for line in lines)


def test_an_answer_short_of_certainty_goes_to_the_fallback_model(augurs, model_name, tools_model_name):
    r = _chat(augurs["scored"], model_name)
    assert r.status_code == 200, r.text
    confidence = float(r.headers["x-augur-confidence"])
    # Three cities in one question: the 270M model is never certain of all.
    assert confidence < 0.99, r.headers
    r = _chat(augurs["routed"], model_name)
    assert r.status_code == 200, r.text
    assert r.headers["x-augur-fallback"] == "low_confidence", r.headers
    assert r.headers["x-augur-model"] == tools_model_name
    assert r.json()["model"] == model_name  # what the client asked for
