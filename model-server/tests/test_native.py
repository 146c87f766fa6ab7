"""The front's native and OpenAI chat routes against a fake llama-server.

What Ollama clients and proxies see (shapes, errors, framing) and what the
front asks llama-server for (prompt, options, grammar), without a model.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from conftest import MAX_BODY, MODEL, PACKAGE
from fake_llama import Reply
from ollama_front.gojson import go_float64, go_json

MSGS = [{"role": "user", "content": "hi"}]


def test_root_version_and_tags(call):
    r = call("GET", "/")
    assert r.status == 200 and r.body == b"Ollama is running"
    assert call("GET", "/api/version").json() == {"version": "0.32.15"}
    tags = call("GET", "/api/tags").json()["models"]
    assert [m["name"] for m in tags] == [MODEL] and tags[0]["capabilities"] == ["completion"]


def test_chat_whole_answer_and_what_llama_server_was_asked(call, fake):
    fake.script(Reply(pieces=["Hel", "lo"]))
    r = call("POST", "/api/chat", {"model": MODEL, "messages": [{"role": "system", "content": "be brief"}] + MSGS,
                                   "stream": False, "options": {"temperature": 0, "seed": 7, "num_predict": 5}})
    assert r.status == 200 and r.headers["content-type"] == "application/json; charset=utf-8"
    v = r.json()
    assert v["message"] == {"role": "assistant", "content": "Hello"}
    assert v["done"] is True and v["done_reason"] == "stop" and v["eval_count"] == 2
    assert v["prompt_eval_count"] > 0 and v["total_duration"] > 0
    sent = fake.completions()[0]
    assert sent["prompt"] == ("<start_of_turn>user\nbe brief<end_of_turn>\n"
                              "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n")
    assert sent["stream"] is True and sent["n_predict"] == 5 and sent["seed"] == 7
    assert sent["temperature"] == 0 and sent["top_k"] == 64 and sent["stop"] == ["<end_of_turn>"]


def test_chat_stream_is_ndjson_with_a_done_chunk(call, fake):
    fake.script(Reply(pieces=["a", "b"], stop_type="limit"))
    r = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS})
    assert r.status == 200 and r.headers["content-type"] == "application/x-ndjson"
    chunks = r.lines()
    assert [c["message"]["content"] for c in chunks] == ["a", "b", ""]
    assert [c["done"] for c in chunks] == [False, False, True]
    assert chunks[-1]["done_reason"] == "length"
    assert fake.completions()[0]["n_predict"] == 40960  # 10 x num_ctx when absent


def test_tools_are_refused_as_ollama_refuses_them_for_gemma3(call, fake):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    r = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "tools": tools})
    assert r.status == 400
    assert r.json() == {"error": "registry.ollama.ai/library/gemma3:270m does not support tools"}
    r = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "tools": tools, "think": True})
    assert r.json() == {"error": '"gemma3:270m" does not support thinking'}
    r = call("POST", "/v1/chat/completions", {"model": MODEL, "messages": MSGS, "tools": tools})
    assert r.status == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["message"] == "registry.ollama.ai/library/gemma3:270m does not support tools"
    assert fake.completions() == []


def test_format_json_and_schema_and_an_upstream_refusal(call, fake):
    call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "stream": False, "format": "json"})
    call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "stream": False, "format": {"type": "object"}})
    first, second = fake.completions()
    assert "root   ::= object" in first["grammar"] and "json_schema" not in first
    assert second["json_schema"] == {"type": "object"}
    fake.script(Reply(status=400, body='{"error":{"message":"unrecognized type json"}}\n'))
    r = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "format": {"type": "json"}})
    assert r.status == 400 and "unrecognized type json" in r.json()["error"]
    r = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "format": "yaml"})
    assert r.status == 500 and r.json()["error"].startswith('invalid format: "\\"yaml\\""')


def test_generate_whole_with_context(call, fake):
    r = call("POST", "/api/generate", {"model": MODEL, "prompt": "hi", "stream": False})
    v = r.json()
    assert v["response"] == "Hello world." and v["done"] is True and isinstance(v["context"], list)


def test_a_repeated_token_ends_the_stream_without_a_done_chunk(call, fake):
    fake.script(Reply(pieces=["x"] * 40))
    chunks = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS}).lines()
    assert len(chunks) == 31 and not any(c["done"] for c in chunks)


def test_openai_chat_stream_ends_with_usage_and_done(call, fake):
    r = call("POST", "/v1/chat/completions", {"model": MODEL, "messages": MSGS, "stream": True,
                                              "stream_options": {"include_usage": True}})
    assert r.headers["content-type"] == "text/event-stream"
    events = [data for _, data in r.events()]
    assert events[-1] == "[DONE]"
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": "Hello"}
    assert events[-3]["choices"][0]["finish_reason"] == "stop"
    assert events[-2]["choices"] == [] and events[-2]["usage"]["completion_tokens"] == 3


def test_model_errors(call, fake):
    assert call("POST", "/api/chat", {"messages": MSGS}).json() == {"error": "model is required"}
    r = call("POST", "/api/chat", {"model": "llama3", "messages": MSGS})
    assert r.status == 404 and r.json() == {"error": "model 'llama3' not found"}


def test_malformed_bodies_get_encoding_json_texts(call):
    cases = [
        ('{"model": ', "unexpected EOF"),
        ('{"model" x', "invalid character 'x' after object key"),
        ("", "missing request body"),
        ("[1]", "json: cannot unmarshal array into Go value of type api.ChatRequest"),
        ('{"model": 5}', "json: cannot unmarshal number into Go struct field ChatRequest.model of type string"),
        ('{"model": NaN}', "invalid character 'N' looking for beginning of value"),
        ("[" * 5000 + "]" * 5000, "exceeded max depth"),
    ]
    for body, message in cases:
        r = call("POST", "/api/chat", body)
        assert (r.status, r.json()) == (400, {"error": message}), body[:20]


def test_routing_quirks(call):
    assert call("GET", "/nope").body == b"404 page not found"
    r = call("GET", "/api/chat")
    assert r.status == 405 and r.headers["allow"] == "POST"
    r = call("POST", "/api/chat/", {"model": MODEL})
    assert r.status == 307 and r.headers["location"] == "/api/chat"
    assert call("GET", "/api/version", headers={"Host": "example.com"}).status == 403
    r = call("POST", "/api/pull", {"model": MODEL})
    assert r.status == 501 and "not supported" in r.json()["error"]


def test_bodies_are_bounded_and_framing_errors_are_answered(call, front):
    r = call("POST", "/api/chat", "x" * (MAX_BODY + 1))
    assert r.status == 413 and r.json() == {"error": "request body too large"}
    host, port = front.split(":")
    for head in (b"Content-Length: abc\r\n", b"Transfer-Encoding: chunked\r\n"):
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"POST /api/chat HTTP/1.1\r\nHost: " + front.encode() + b"\r\n" + head + b"\r\nzz\r\n\r\n")
            answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 400"), answer
        assert b"Traceback" not in answer


def test_an_early_answer_reaches_a_client_still_sending_its_body(front):
    host, port = front.split(":")
    head = b"POST /api/chat HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n" % (front.encode(), MAX_BODY + 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(head + b"x" * (1 << 20))
        time.sleep(0.3)  # the 413 is written by now; the client goes on sending
        s.sendall(b"x" * (4 << 20))
        s.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert answer.endswith(b'{"error":"request body too large"}'), answer[-200:]


def test_a_chunked_body_is_read(call, fake):
    body = go_json({"model": MODEL, "messages": MSGS, "stream": False}).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    r = call("POST", "/api/chat", chunked, headers={"Transfer-Encoding": "chunked"})
    assert r.status == 200 and r.json()["message"]["content"] == "Hello world."


def test_go_float64_text():
    assert [go_float64(x) for x in (1.0, 0.5, 1e-7, 1e21, 123456789.0, 1e20)] == \
        ["1", "0.5", "1e-7", "1e+21", "123456789", "100000000000000000000"]
    assert go_json({"t": 1.0, "s": "<&>"}, floats=True) == '{"t":1,"s":"\\u003c\\u0026\\u003e"}'


def test_it_starts_by_its_path_and_as_a_module():
    for argv, env in (([str(PACKAGE)], {}), (["-m", "ollama_front"], {"PYTHONPATH": str(PACKAGE.parent)})):
        out = subprocess.run([sys.executable, *argv, "--help"], capture_output=True, text=True, timeout=30,
                             env={**os.environ, **env}, cwd="/")
        assert out.returncode == 0 and "--llama-url" in out.stdout, out.stderr
