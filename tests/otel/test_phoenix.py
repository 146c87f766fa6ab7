"""A request retried, then answered by the fallback model, with the
client's `traceparent`: the receiver holds one trace, the client's, with
the request span under the client's span, each upstream request as a span
of its own under the attempt or retry that made it, the fallback span, and
the GenAI and augur attributes; the upstream requests carried the trace on.
"""
import os
import time

import httpx

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def trace_spans(phoenix: str, trace_id: str, want: int, timeout: float = 30.0) -> list:
    """The spans of `trace_id` the receiver has, once it has at least
    `want` of them and no more arrive."""
    deadline = time.time() + timeout
    seen: list = []
    while time.time() < deadline:
        r = httpx.get(f"{phoenix}/v1/projects/default/spans", params={"limit": 1000}, timeout=10.0)
        r.raise_for_status()
        spans = [s for s in r.json()["data"] if s["context"]["trace_id"] == trace_id]
        if len(spans) >= want and len(spans) == len(seen):
            return spans
        seen = spans
        time.sleep(0.5)
    raise AssertionError(f"{len(seen)} spans of trace {trace_id} after {timeout}s: {seen}")


def one(spans: list, **match) -> dict:
    found = [s for s in spans if all(s.get(k) == v for k, v in match.items())]
    assert len(found) == 1, (match, [(s["name"], s["parent_id"]) for s in spans])
    return found[0]


def under(spans: list, parent: dict) -> list:
    return [s for s in spans if s["parent_id"] == parent["context"]["span_id"]]


def attr(span: dict, key: str):
    value = span["attributes"].get(key)
    return None if value is None else str(value)


def test_each_attempt_of_a_retried_then_fallen_back_request_is_a_span(stack):
    trace_id, client_span = os.urandom(16).hex(), os.urandom(8).hex()
    r = httpx.post(
        f"{stack['url']}/api/chat",
        headers={"traceparent": f"00-{trace_id}-{client_span}-01"},
        json={"model": "echo", "stream": False, "format": SCHEMA,
              "messages": [{"role": "user", "content": "a number"}]},
        timeout=30.0,
    )
    assert r.status_code == 200, r.text
    assert r.headers["x-augur-model"] == "llama3.2"
    assert r.headers["x-augur-fallback"] == "invalid"

    # request, admission, attempt + retry + fallback's attempt (each with
    # its upstream request), fallback.
    spans = trace_spans(stack["phoenix"], trace_id, want=9)
    names = sorted(s["name"] for s in spans)
    assert names == sorted([
        "chat echo", "admission", "attempt", "chat echo:latest", "retry",
        "chat echo:latest", "fallback", "attempt", "chat llama3.2:latest",
    ]), names

    root = one(spans, name="chat echo")
    assert root["parent_id"] == client_span, "the client's span is the request span's parent"
    assert attr(root, "gen_ai.operation.name") == "chat"
    assert attr(root, "gen_ai.request.model") == "echo"
    assert attr(root, "gen_ai.response.model") == "llama3.2"
    assert attr(root, "augur.validation") == "valid"
    assert attr(root, "augur.fallback") == "llama3.2 (invalid)"
    assert attr(root, "http.response.status_code") == "200"
    assert attr(root, "gen_ai.usage.input_tokens") is not None
    assert attr(root, "gen_ai.usage.output_tokens") is not None
    assert attr(root, "augur.request_id") == r.headers["x-request-id"]

    one(under(spans, root), name="admission")
    first = one(under(spans, root), name="attempt")
    retry = one(under(spans, root), name="retry")
    for step, number in ((first, "1"), (retry, "2")):
        assert attr(step, "augur.attempt") == number
        assert attr(step, "gen_ai.request.model") == "echo"
        assert attr(step, "augur.validation") == "invalid"
        assert "required" in attr(step, "augur.violations")
        call = one(under(spans, step), name="chat echo:latest")
        assert attr(call, "gen_ai.request.model") == "echo:latest"
        assert attr(call, "http.response.status_code") == "200"
        assert attr(call, "server.address")
    assert attr(retry, "augur.retry.cause") == "invalid"

    fallback = one(under(spans, root), name="fallback")
    assert attr(fallback, "gen_ai.request.model") == "llama3.2"
    assert attr(fallback, "augur.fallback.reason") == "invalid"
    assert attr(fallback, "augur.outcome") == "answered"
    answered = one(under(spans, fallback), name="attempt")
    assert attr(answered, "augur.validation") == "valid"
    call = one(under(spans, answered), name="chat llama3.2:latest")
    assert attr(call, "gen_ai.request.model") == "llama3.2:latest"


def test_a_request_without_trace_context_is_a_trace_of_its_own(stack):
    r = httpx.get(f"{stack['url']}/api/tags", timeout=30.0)
    assert r.status_code == 200
    request_id = r.headers["x-request-id"]
    deadline = time.time() + 30
    while time.time() < deadline:
        data = httpx.get(f"{stack['phoenix']}/v1/projects/default/spans",
                         params={"limit": 1000}, timeout=10.0).json()["data"]
        roots = [s for s in data if s["attributes"].get("augur.request_id") == request_id]
        if roots:
            break
        time.sleep(0.5)
    else:
        raise AssertionError(f"no span of request {request_id}")
    root = roots[0]
    assert root["name"] == "GET /api/tags"
    assert root["parent_id"] is None
    trace = [s for s in data if s["context"]["trace_id"] == root["context"]["trace_id"]]
    call = one(under(trace, root), name="GET /api/tags")
    assert attr(call, "http.response.status_code") == "200"
