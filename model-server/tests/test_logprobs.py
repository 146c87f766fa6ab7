"""Token log-probabilities (`logprobs`, `top_logprobs`) against a fake llama-server.

What the front asks llama-server for (`n_probs`), and the `logprobs` Ollama
returns: on every chunk for that chunk's tokens, concatenated on a whole
answer, on `/api/chat`, `/api/generate` and `/v1/chat/completions`; nothing
when a request does not ask for them.
"""

from __future__ import annotations

import math

from conftest import MODEL
from fake_llama import LOGPROB, Reply
from ollama_front.gojson import go_float64
from ollama_front.logprobs import convert

MSGS = [{"role": "user", "content": "hi"}]
PIECES = ["Hel", "lo", " wörld"]


def tokens(logprobs: list[dict]) -> list[str]:
    return [e["token"] for e in logprobs]


def test_whole_chat_answer_carries_every_token(call, fake):
    fake.script(Reply(pieces=PIECES, logprobs=[-0.5, -5e-05, -2.25]))
    r = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "stream": False, "logprobs": True})
    assert r.status == 200
    v = r.json()
    assert v["message"]["content"] == "Hello wörld"
    assert v["logprobs"] == [
        {"token": "Hel", "logprob": -0.5, "bytes": [72, 101, 108]},
        {"token": "lo", "logprob": -5e-05, "bytes": [108, 111]},
        {"token": " wörld", "logprob": -2.25, "bytes": list(" wörld".encode())}]
    keys = list(v)
    assert keys[keys.index("logprobs") - 1:keys.index("logprobs") + 2] == ["done_reason", "logprobs", "total_duration"]
    assert b'"logprob":-0.00005,' in r.body  # Go's float64 text, not Python's -5e-05
    assert fake.completions()[0]["n_probs"] == 1


def test_streamed_chat_chunks_carry_their_own_tokens(call, fake):
    fake.script(Reply(pieces=PIECES))
    r = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "logprobs": True, "top_logprobs": 3})
    *chunks, done = r.lines()
    assert [tokens(c["logprobs"]) for c in chunks] == [[p] for p in PIECES]
    for c in chunks:
        assert list(c) == ["model", "created_at", "message", "done", "logprobs"]
        (entry,) = c["logprobs"]
        assert entry["logprob"] == LOGPROB
        assert tokens(entry["top_logprobs"]) == [entry["token"], "alt1", "alt2"]
        assert list(entry["top_logprobs"][1]) == ["token", "logprob", "bytes"]
    assert done["done"] is True and "logprobs" not in done
    assert fake.completions()[0]["n_probs"] == 3


def test_generate_whole_and_streamed(call, fake):
    fake.script(Reply(pieces=PIECES), Reply(pieces=PIECES))
    body = {"model": MODEL, "prompt": "hi", "logprobs": True, "top_logprobs": 2}
    *chunks, done = call("POST", "/api/generate", body).lines()
    assert [tokens(c["logprobs"]) for c in chunks] == [[p] for p in PIECES]
    assert all(list(c)[-1] == "logprobs" for c in chunks) and "logprobs" not in done
    v = call("POST", "/api/generate", {**body, "stream": False}).json()
    assert tokens(v["logprobs"]) == PIECES and list(v)[-1] == "logprobs"
    assert [len(e["top_logprobs"]) for e in v["logprobs"]] == [2, 2, 2]


def test_nothing_changes_without_logprobs(call, fake):
    fake.script(Reply(pieces=PIECES), Reply(pieces=PIECES), Reply(pieces=PIECES))
    r1 = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "stream": False})
    r2 = call("POST", "/api/chat", {"model": MODEL, "messages": MSGS, "top_logprobs": 3, "logprobs": False})
    r3 = call("POST", "/v1/chat/completions", {"model": MODEL, "messages": MSGS, "top_logprobs": 3})
    for r in (r1, r2, r3):
        assert r.status == 200 and b"logprob" not in r.body
    assert all("n_probs" not in c for c in fake.completions())


def test_openai_chat_whole_and_streamed(call, fake):
    fake.script(Reply(pieces=PIECES), Reply(pieces=PIECES))
    body = {"model": MODEL, "messages": MSGS, "logprobs": True, "top_logprobs": 2}
    v = call("POST", "/v1/chat/completions", body).json()
    choice = v["choices"][0]
    assert list(choice) == ["index", "message", "finish_reason", "logprobs"]
    assert tokens(choice["logprobs"]["content"]) == PIECES
    assert tokens(choice["logprobs"]["content"][0]["top_logprobs"]) == ["Hel", "alt1"]
    events = call("POST", "/v1/chat/completions", {**body, "stream": True}).events()
    datas = [d for _, d in events if d != "[DONE]"]
    pieces = [d for d in datas if d["choices"][0]["finish_reason"] is None]
    assert [tokens(d["choices"][0]["logprobs"]["content"]) for d in pieces] == [[p] for p in PIECES]
    assert "logprobs" not in datas[-1]["choices"][0]


def test_top_logprobs_is_range_checked_and_typed(call, fake):
    for path, body in (("/api/chat", {"messages": MSGS}), ("/api/generate", {"prompt": "hi"})):
        r = call("POST", path, {"model": MODEL, "logprobs": True, "top_logprobs": 21, **body})
        assert r.status == 400 and r.json() == {"error": "top_logprobs must be between 0 and 20"}
    r = call("POST", "/v1/chat/completions", {"model": MODEL, "messages": MSGS, "logprobs": True, "top_logprobs": -1})
    assert r.status == 400 and r.json()["error"]["message"] == "top_logprobs must be between 0 and 20"
    r = call("POST", "/v1/chat/completions", {"model": MODEL, "messages": MSGS, "logprobs": "yes"})
    assert r.status == 400
    assert r.json()["error"]["message"] == ("json: cannot unmarshal string into Go struct field "
                                            "ChatCompletionRequest.logprobs of type bool")
    assert fake.completions() == []


def test_post_sampling_probabilities_are_read_as_ollama_reads_them():
    # llm/llama_server.go convertLogprobs: `prob` stands in when `logprob` is 0, and the
    # alternatives are kept only when top_logprobs > 0.
    probs = [{"id": 1, "token": "a", "bytes": [97], "prob": 0.25,
              "top_probs": [{"id": 1, "token": "a", "bytes": [97], "prob": 0.25}]}]
    assert convert(probs, include_top=False) == [{"token": "a", "logprob": 0.25, "bytes": [97]}]
    assert convert(probs, include_top=True)[0]["top_logprobs"] == [{"token": "a", "logprob": 0.25, "bytes": [97]}]
    assert convert([{"token": "", "logprob": math.log(0.5)}], False) == [{"token": "", "logprob": math.log(0.5)}]
    assert go_float64(-5e-05) == "-0.00005"
