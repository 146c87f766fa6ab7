"""The README's first command, `scripts/local`, as a new user runs it.

It brings up augur in front of the bundled Gemma 3 270M, prints where to
point clients, serves them (a chat answer, the status page, token metrics)
until Ctrl-C, and then leaves nothing listening. What a newcomer tries
first works as printed: the banner's example is bounded, the README's
first tool example names a model the bundled upstream serves and comes
back as one call with a value, and the log file holds no colour codes.
"""

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _get(url, timeout=30):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers.get("content-type", ""), r.read()


def _post(url, body, timeout=120):
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, json.loads(r.read())


def _read_until(proc, pattern, seconds, seen):
    """Lines of the script's output until one matches `pattern`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                break
            continue
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m
    raise AssertionError(f"no line matching {pattern!r}; output:\n{''.join(seen)}")


def _banner_example(block):
    """The JSON body of the curl example the ready banner prints."""
    m = re.search(r"curl -s \S+/api/chat -d '(.*?)'", block, re.S)
    assert m, block
    return json.loads(m.group(1))


def _readme_tool_example():
    """The README's first example: tools on stock gemma3, with curl."""
    text = (ROOT / "README.md").read_text()
    m = re.search(r"Tools on stock gemma3, with curl:\s*```sh\ncurl -s (\S+) -d '(.*?)'\n", text, re.S)
    assert m, "the README's first example is not where it was"
    return m.group(1), json.loads(m.group(2))


def _first_hour(port, block):
    """The banner's example and the README's first tool example."""
    body = _banner_example(block)
    assert body["options"]["num_predict"] <= 128, body
    status, answer = _post(f"http://127.0.0.1:{port}/api/chat", body)
    assert status == 200 and answer["done"] is True, answer
    assert answer["eval_count"] <= body["options"]["num_predict"], answer

    url, body = _readme_tool_example()
    assert url.startswith("http://127.0.0.1:11435/"), url
    path = url.split("11435", 1)[1]
    for _ in range(3):
        status, answer = _post(f"http://127.0.0.1:{port}{path}", body)
        assert status == 200, answer
        calls = answer["message"].get("tool_calls") or []
        # One call, to the one tool, with a value: no invented extra
        # cities, no empty city (the example asks for temperature 0).
        assert [c["function"]["name"] for c in calls] == ["get_weather"], answer
        city = calls[0]["function"]["arguments"].get("city")
        assert isinstance(city, str) and city.strip(), answer


def test_scripts_local_serves_clients_until_ctrl_c():
    port, admin = _free_port(), _free_port()
    env = dict(os.environ)
    env.setdefault("AUGUR_BIN", str(ROOT / "target" / "debug" / "augur"))
    env.pop("AUGUR_ADMIN_TOKEN", None)
    proc = subprocess.Popen(
        [str(ROOT / "scripts" / "local"), "--port", str(port), "--admin-port", str(admin)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen = []
    try:
        upstream = int(_read_until(proc, r"upstream .* on 127\.0\.0\.1:(\d+)", 120, seen).group(1))
        _read_until(proc, r"augur is ready", 180, seen)
        _read_until(proc, r"Ctrl-C stops augur", 10, seen)
        block = "".join(seen)
        assert f"OLLAMA_HOST=http://127.0.0.1:{port}" in block, block
        assert f"http://127.0.0.1:{admin}/-/status" in block, block

        status, answer = _post(
            f"http://127.0.0.1:{port}/api/chat",
            {"model": "gemma3:270m", "stream": False, "options": {"num_predict": 8},
             "messages": [{"role": "user", "content": "Say hi."}]},
        )
        assert status == 200 and answer["done"] is True, answer

        _first_hour(port, block)

        status, kind, page = _get(f"http://127.0.0.1:{admin}/-/status")
        assert status == 200 and kind.startswith("text/html"), kind
        status, _, snapshot = _get(f"http://127.0.0.1:{admin}/-/status.json")
        snapshot = json.loads(snapshot)
        assert snapshot["totals"]["requests"] >= 1, snapshot["totals"]
        assert [u["healthy"] for u in snapshot["upstreams"]] == [True], snapshot["upstreams"]

        _, _, metrics = _get(f"http://127.0.0.1:{admin}/metrics")
        tokens = [
            line for line in metrics.decode().splitlines()
            if line.startswith("gen_ai_client_token_usage_sum{")
            and 'gen_ai_request_model="gemma3:270m"' in line
        ]
        assert tokens, "no token counts for gemma3:270m"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, (proc.returncode, "".join(seen))
    log = re.search(r"logs\s+(\S+local-augur\.log)", "".join(seen))
    assert log, "".join(seen)
    assert "\x1b[" not in Path(log.group(1)).read_text(), "colour codes in the log file"
    for p in (port, admin, upstream):
        deadline = time.monotonic() + 10
        while _listening(p) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _listening(p), f"127.0.0.1:{p} still listens after Ctrl-C"
