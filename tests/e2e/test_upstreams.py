"""Several real upstreams behind one augur: routing by model and a fallback
model that answers from another upstream.

Three Ollama-compatible fronts, each its own upstream:
  a  the session's llama-server, serving MODEL;
  b  a second llama-server (same GGUF) serving MODEL-b;
  c  a front serving MODEL-c whose runner is gone (its llama-server port is
     closed), so every generation there fails with Ollama's 500.
A policy gives MODEL-c the fallback MODEL-b; a request for MODEL-c must be
answered by b's real model, with the provenance headers and metric.
"""
import json
import os
import re
import sys
from pathlib import Path

import httpx
import pytest


from conftest import FRONT, ROOT, Service, _free_port

OPTS = {"temperature": 0, "seed": 42, "num_predict": 48}
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 40}}, "required": ["city"]}
MSGS = [{"role": "user", "content": "Which city is the capital of France? Answer in JSON."}]


def _front(name, model, llama_url, gguf, log_dir):
    port = _free_port()
    svc = Service(name, [sys.executable, FRONT, "--port", port, "--llama-url", llama_url, "--model", model,
                         "--gguf", gguf], log_dir)
    url = "http://127.0.0.1:%d" % port
    svc.wait_ready(url + "/api/version", 30)
    return svc, url


@pytest.fixture(scope="module")
def fleet(front_url, model_name, tools_model_name, upstream_paths, log_dir, tmp_path_factory):
    gguf = upstream_paths["AUGUR_GGUF"]
    model_b, model_c = model_name + "-b", model_name + "-c"
    services = []
    try:
        port = _free_port()
        llama_b = Service("llama-server-b", [upstream_paths["AUGUR_LLAMA_SERVER"], "-m", gguf, "--no-jinja",
                                             "--chat-template", "gemma", "--host", "127.0.0.1", "--port", port,
                                             "-c", "4096", "-t", "1", "-np", "1", "--alias", model_b], log_dir)
        services.append(llama_b)
        llama_b.wait_ready("http://127.0.0.1:%d/health" % port, 120)
        svc, front_b = _front("ollama-front-b", model_b, "http://127.0.0.1:%d" % port, gguf, log_dir)
        services.append(svc)
        # A port nothing listens on: the runner behind c is gone.
        svc, front_c = _front("ollama-front-c", model_c, "http://127.0.0.1:%d" % _free_port(), gguf, log_dir)
        services.append(svc)

        policies = tmp_path_factory.mktemp("fleet-policies")
        (policies / "fallback.yaml").write_text(json.dumps(  # JSON is YAML
            {"models": {model_c: {"fallback": {"models": [model_b], "on": ["upstream_error"]}}}}))
        listen, admin = _free_port(), _free_port()
        augur = Service("augur-fleet", [_augur_bin(), "--listen", "127.0.0.1:%d" % listen,
                                        "--admin-listen", "127.0.0.1:%d" % admin,
                                        "--upstream", "a=" + front_url, "--upstream", "b=" + front_b,
                                        "--upstream", "c=" + front_c, "--policies", policies], log_dir)
        services.append(augur)
        admin_url = "http://127.0.0.1:%d" % admin
        augur.wait_ready(admin_url + "/-/ready", 30)
        yield {"url": "http://127.0.0.1:%d" % listen, "admin": admin_url,
               "a": model_name, "a_tools": tools_model_name, "b": model_b, "c": model_c}
    finally:
        for svc in reversed(services):
            svc.stop()


def _augur_bin():
    binary = Path(os.environ.get("AUGUR_BIN") or ROOT / "target" / "debug" / "augur")
    return binary if binary.is_absolute() else ROOT / binary


def _requests_by_upstream(admin):
    text = httpx.get(admin + "/metrics", timeout=10).text
    counts = {}
    for m in re.finditer(r'^augur_upstream_requests_total\{[^}]*upstream="(\w+)"[^}]*\} (\d+)', text, re.M):
        counts[m.group(1)] = counts.get(m.group(1), 0) + int(m.group(2))
    return counts


def _chat(fleet, model, **extra):
    body = {"model": model, "messages": MSGS, "stream": False, "options": OPTS, **extra}
    return httpx.post(fleet["url"] + "/api/chat", json=body, timeout=180)


def test_each_model_is_served_by_the_upstream_that_has_it(fleet):
    tags = httpx.get(fleet["url"] + "/api/tags", timeout=30).json()
    assert {m["name"] for m in tags["models"]} >= {fleet["a"], fleet["b"], fleet["c"]}
    status = httpx.get(fleet["admin"] + "/-/upstreams", timeout=30).json()["upstreams"]
    assert {u["name"]: u["healthy"] for u in status} == {"a": True, "b": True, "c": True}
    # a is the session's front, which also serves the GGUF as the tool-capable model
    assert {u["name"]: sorted(u["models"]) for u in status} == {
        "a": sorted([fleet["a"], fleet["a_tools"]]), "b": [fleet["b"]], "c": [fleet["c"]]}

    for upstream, model in (("a", fleet["a"]), ("b", fleet["b"]), ("a", fleet["a"])):
        before = _requests_by_upstream(fleet["admin"])
        r = _chat(fleet, model)
        assert r.status_code == 200, r.text
        assert r.json()["model"] == model and r.json()["message"]["content"].strip()
        assert "x-augur-fallback" not in r.headers
        after = _requests_by_upstream(fleet["admin"])
        grew = {k for k in after if after[k] > before.get(k, 0)}
        assert grew == {upstream}, (model, before, after)


def test_a_failing_model_is_answered_by_its_fallback_on_another_upstream(fleet):
    # Straight to c, the model's only upstream: Ollama's 500 for a runner that is gone.
    r = httpx.post(fleet["url"] + "/api/chat", timeout=60,
                   json={"model": fleet["c"], "messages": MSGS, "stream": False})
    assert r.status_code == 500, r.text

    before = _requests_by_upstream(fleet["admin"])
    r = _chat(fleet, fleet["c"], format=CITY)
    assert r.status_code == 200, r.text
    assert r.headers["x-augur-model"] == fleet["b"]
    assert r.headers["x-augur-fallback"] == "upstream_error"
    body = r.json()
    assert body["model"] == fleet["c"]  # what the client asked for
    answer = json.loads(body["message"]["content"])
    assert isinstance(answer["city"], str) and len(answer["city"]) <= 40
    after = _requests_by_upstream(fleet["admin"])
    assert after["c"] > before.get("c", 0) and after["b"] > before.get("b", 0)
    assert after.get("a", 0) == before.get("a", 0)

    # Streamed: the fallback happens before the first byte, so the headers say it.
    with httpx.stream("POST", fleet["url"] + "/api/chat", timeout=180,
                      json={"model": fleet["c"], "messages": MSGS, "format": CITY, "options": OPTS}) as r:
        assert r.status_code == 200
        assert r.headers["x-augur-model"] == fleet["b"]
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert lines[-1]["done"] is True and all(line["model"] == fleet["c"] for line in lines)
    json.loads("".join(line["message"]["content"] for line in lines))

    metrics = httpx.get(fleet["admin"] + "/metrics", timeout=10).text
    assert re.search(r'^augur_fallbacks_total\{[^}]*reason="upstream_error"[^}]*\} [1-9]', metrics, re.M), metrics
