"""An agentic CLI end to end: Claude Code in headless mode (`claude -p`),
pointed at augur, with gemma3 270M behind it, offline.

Claude Code is installed from npm at a pinned version into
$AUGUR_CACHE/npm on first use (a failed install fails the test). It runs
with its own system prompt and request shape (thinking included: it asks
for effort "high", which augur emulates), limited to its Read tool, two
turns and 512 output tokens, and talks to augur's Anthropic Messages
surface through a recording proxy that keeps every request and response
body. One run must show the whole agent loop: Claude Code declares Read;
augur answers with a tool_use block whose input is valid against Read's
input schema; Claude Code runs Read and sends a tool_result for that call;
augur accepts that turn and answers it.

Claude Code gives no way to force a tool call (it sends no tool_choice), so
the prompt names the tool and its arguments. The model, sampling at the
default temperature, may still answer without a call, derail until augur
refuses its output (no valid call or answer, or arguments still invalid
after repair), or ramble in its last answer to the output limit (which
Claude Code reports as an error). Only those outcomes start a new run, at most ATTEMPTS in
all and none after BUDGET_S; anything else that is wrong fails at once. The
model also writes the path itself: when it is the note's, the tool_result
must carry the note's contents; when it names no existing file, the
tool_result must be Read's error.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid

import pytest

from agentic import npm
from agentic.recorder import Recorder
from agentic.wire import anthropic_message_from_sse, schema_errors

CLAUDE_CODE = ("@anthropic-ai/claude-code", "2.1.330", "claude", "2.1.330 (Claude Code)")
ATTEMPTS = 4
CLI_TIMEOUT_S = 90
BUDGET_S = 150
# augur's errors when the model's output is no valid call or answer, or a call's arguments
# stay invalid after repair: it refuses to pass them on, which is right.
SOFT_ERRORS = ("the model's answer is not a valid tool call or answer", "has invalid arguments")


class ModelDeclined(Exception):
    """The model did not take its part in the loop (no call, or no valid output)."""


@pytest.fixture(scope="session")
def claude_bin(upstream_paths):
    package, version, name, expect = CLAUDE_CODE
    return npm.install(upstream_paths["AUGUR_CACHE"], package, version, name, expect)


def claude_env(home, base_url):
    """A clean environment: nothing from the caller's Anthropic settings or proxies."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-unused",
        # No telemetry, error reporting or update checks: the base URL is the only host contacted.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        # Without this, Claude Code also declares a tool search tool and deferred
        # tools (`defer_loading: true`, which augur does not offer to the model);
        # the test keeps to the tools it checks.
        "ENABLE_TOOL_SEARCH": "false",
        # Fail at once on an error answer instead of backing off and retrying.
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "API_TIMEOUT_MS": str(CLI_TIMEOUT_S * 1000),
        # Bounds each answer (Claude Code asks for 32000 tokens): a model that rambles
        # inside the JSON stops in seconds, not at the end of its context.
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "512",
    }


def soft_error(error):
    return error.get("type") == "api_error" and any(s in error.get("message", "") for s in SOFT_ERRORS)


def describe(exchanges):
    out = []
    for e in exchanges:
        out.append("%s %s -> %s\n  request (tail): %s\n  response (head): %s"
                   % (e.method, e.path, e.status, e.req_body[-1500:].decode("utf-8", "replace"),
                      e.resp_body[:1500].decode("utf-8", "replace")))
    return "\n".join(out)


def result_text(block):
    """The text of a message or a tool_result block (a string or a list of parts)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [])


def calls_by_id(blocks):
    return sorted(([b["id"], b["name"], b["input"]] for b in blocks), key=lambda c: c[0])


def run_claude(claude_bin, augur_url, model_name, project, home, prompt):
    argv = [str(claude_bin), "-p", prompt, "--model", model_name, "--tools", "Read", "--allowedTools", "Read",
            "--max-turns", "2", "--output-format", "json"]
    t0 = time.monotonic()
    with Recorder(augur_url) as rec:
        try:
            run = subprocess.run(argv, cwd=project, env=claude_env(home, rec.url), stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            pytest.fail("claude -p did not finish within %d s\nstderr: %s\n%s"
                        % (CLI_TIMEOUT_S, e.stderr, describe(rec.exchanges)), pytrace=False)
    return run, rec.exchanges, time.monotonic() - t0


def check_run(run, exchanges, model_name, prompt, project, note, marker):
    """Asserts the agent loop in one recorded run; raises ModelDeclined when
    the model, not augur or the CLI, kept it from completing. Returns the calls."""
    context = "claude exit %s\nstdout: %s\nstderr: %s\n%s" % (
        run.returncode, run.stdout[-2000:], run.stderr[-2000:], describe(exchanges))
    turns = [e for e in exchanges if e.method == "POST" and e.path.split("?")[0] == "/v1/messages"]
    assert turns, context

    # 1. Claude Code declares its tools (Read only, as asked) and streams.
    first = json.loads(turns[0].req_body)
    assert first["model"] == model_name and first["stream"] is True, context
    assert [t["name"] for t in first["tools"]] == ["Read"], context
    read_schema = first["tools"][0]["input_schema"]
    assert read_schema["required"] == ["file_path"]
    assert any(prompt in result_text(m) for m in first["messages"] if m["role"] == "user"), context

    # 2. augur answers every turn with a well-formed stream. A stream may end in an
    #    error event only when augur refused the model's output; Claude Code then
    #    sends that turn again. Every call fits Read's schema.
    answers = []
    for t in turns:
        assert t.status == 200, context
        assert t.resp_headers.get("content-type", "").startswith("text/event-stream"), context
        assert json.loads(t.req_body)["tools"] == first["tools"], context
        a = anthropic_message_from_sse(t.resp_body)
        assert a["_events"][0] == "message_start", context
        assert all(soft_error(e) for e in a["_errors"]), context
        if not a["_errors"]:
            assert a["_events"][-1] == "message_stop", context
            assert a["stop_reason"] in ("end_turn", "tool_use", "max_tokens"), context
        for b in a["content"]:
            if b["type"] == "tool_use":
                assert b["name"] == "Read" and b["id"], b
                assert schema_errors(b["input"], read_schema) == [], (b, read_schema)
        answers.append(a)

    # 3. The first complete answer with calls: a tool_use turn.
    at = next((i for i, a in enumerate(answers) if not a["_errors"]
               and any(b["type"] == "tool_use" for b in a["content"])), None)
    if at is None:
        raise ModelDeclined("no call: %s" % [a["_errors"] or a["content"] for a in answers])
    calls = [b for b in answers[at]["content"] if b["type"] == "tool_use"]
    assert answers[at]["stop_reason"] == "tool_use", context
    result = json.loads(run.stdout)
    assert result["type"] == "result", context
    if at == len(turns) - 1:
        # Claude Code stops before running calls it has no turn left to answer.
        assert result["subtype"] == "error_max_turns", context
        raise ModelDeclined("the call came on the last turn: %s" % [a["_errors"] or a["content"] for a in answers])

    # 4. Claude Code ran Read and sent each result back, after its own copy of the calls.
    follow = json.loads(turns[at + 1].req_body)
    *_, assistant, user = follow["messages"]
    assert assistant["role"] == "assistant" and user["role"] == "user", context
    sent_back = [b for b in assistant["content"] if b["type"] == "tool_use"]
    assert calls_by_id(sent_back) == calls_by_id(calls), context
    results = {b["tool_use_id"]: b for b in user["content"] if b["type"] == "tool_result"}
    assert set(results) == {c["id"] for c in calls}, context
    for call in calls:
        result_block = results[call["id"]]
        text = result_text(result_block)
        assert text.strip() and "No such tool" not in text, result_block
        # Claude Code trims the path and reads it relative to the project.
        raw = call["input"]["file_path"].strip()
        path = os.path.realpath(os.path.join(project, raw)) if "\0" not in raw else None
        if path == os.path.realpath(note) and set(call["input"]) == {"file_path"}:
            # Read's own output (numbered lines): the tool really ran on the note.
            assert marker in text and not result_block.get("is_error"), result_block
        elif path and not os.path.exists(path):
            assert result_block.get("is_error") is True, result_block

    # 5. augur accepts the turn with the results and answers it (checked in 2): text,
    #    another call, or, when the model's answer is empty, thinking alone or nothing,
    #    which Claude Code follows with a nudge turn. An error event there is the model's.
    if answers[at + 1]["_errors"]:
        raise ModelDeclined("turn with the results: %s" % answers[at + 1]["_errors"])

    # 6. Claude Code saw the run work, ended by an answer or the turn limit. A last
    #    answer that ran to the output limit (the model rambling; augur says so with
    #    stop_reason "max_tokens", as Anthropic does) is an error to Claude Code.
    assert result["num_turns"] >= 2, context
    assert result["subtype"] in ("success", "error_max_turns"), context
    if result["subtype"] == "success":
        if (result["is_error"] and result.get("api_error") == "max_output_tokens"
                and not answers[-1]["_errors"] and answers[-1]["stop_reason"] == "max_tokens"):
            raise ModelDeclined("the last answer ran to the output limit")
        assert result["is_error"] is False, context
    return calls


def test_claude_code_runs_a_tool_through_augur(claude_bin, augur_url, model_name, tmp_path):
    declined, t0 = [], time.monotonic()
    for attempt in range(1, ATTEMPTS + 1):
        if attempt > 1 and time.monotonic() - t0 > BUDGET_S:
            break
        project = tempfile.mkdtemp(prefix="augur-cc-")
        try:
            marker = "augur-note-" + uuid.uuid4().hex[:8]
            note = os.path.join(project, "note.txt")
            with open(note, "w") as f:
                f.write("The secret word is %s.\n" % marker)
            home = tmp_path / ("home%d" % attempt)
            home.mkdir()
            prompt = 'Call the Read tool with {"file_path": "%s"}' % note
            run, exchanges, elapsed = run_claude(claude_bin, augur_url, model_name, project, home, prompt)
            try:
                calls = check_run(run, exchanges, model_name, prompt, project, note, marker)
            except ModelDeclined as e:
                declined.append("run %d (%.0f s): %s" % (attempt, elapsed, e))
                print(declined[-1])
                continue
        finally:
            shutil.rmtree(project, ignore_errors=True)
        print("claude -p, run %d: the agent loop in %.0f s, calls %s"
              % (attempt, elapsed, [c["input"] for c in calls]))
        return
    pytest.fail("the model did not complete the loop in %d runs (%.0f s):\n%s"
                % (len(declined), time.monotonic() - t0, "\n".join(declined)), pytrace=False)
