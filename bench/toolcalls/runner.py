"""Tool-call quality benchmark: the cases against gemma3 270M, five ways.

Rows (each starts on a freshly started llama-server, since answers at
temperature 0 still depend on the server's earlier requests):

  a      (ref-a) plain envelope direct: no augur. The runner sends the
         simplest emulation straight to the upstream: a single-call envelope
         as `format` ({"anyOf": [{"tool_call": ...}, {"response": ...}]}, the
         call's name an enum of the tool names, its arguments any object),
         one line per tool in the system prompt, and parses the JSON itself.
  b      (ref-b) augur with repair, retries and loop-breaking turned off by a
         policy file. Keys this augur does not know yet are found out (the
         whole file is rejected; GET /-/policies shows why) and left out; the
         keys applied are printed under the tables.
  augur  augur with its default policies (empty policies directory).
  augur-small
         augur with the small-model rules on (policy tools.small_model:
         true), as advised for models this small: calls nobody asked for
         and ungrounded continuations are withheld.
  augur-text
         augur in text mode (policy tools.mode: text): no `format`; the model
         writes calls as a Python list, as Gemma 3's own function-calling
         prompt asks, and augur parses them (an answer it cannot read is
         asked again in grammar mode). Against the augur row, it measures
         text mode against grammar mode.

  augur-conf
         augur (default policies) scoring its answers (policy
         confidence: {threshold: 0.5}), the requests streamed: the done
         chunk carries every signal per call (min, mean, unsure_tokens,
         tokens). The calibration row: with a fallback row (augur-small by
         default, --fallback-row) the runner prints the AUROC of each
         signal, a reliability table and a sweep of thresholds
         (calibration.py).
  augur-small-auto
         augur with tools.small_model: auto: the small-model rules judge
         only the calls the model was unsure of (below the default
         confidence threshold, 0.78); whole answers, their
         X-Augur-Confidence headers recorded.

  native (ref-native) the same GGUF served as a tool-capable model
         (gemma3-tools:270m: a chat template that declares the tools, the
         answer read by Ollama's own tool parser in model-server/ollama_front),
         asked directly with `tools`: what Ollama itself would return.
  augur-native
         augur (default policies) in front of that tool-capable model: its
         native calls checked, repaired, retried; calls written as text
         rescued; an empty answer asked again.

Rows other than a and augur are configured by a policy file (ROW_POLICIES).
The native and confidence rows are not in the default set:
--rows native,augur-native; --rows augur,augur-small,augur-small-auto,augur-conf.

Every request goes through the official `ollama` client with
options {"temperature": 0, "seed": 42, "num_predict": 512}: without a
token bound, a 270M model that loops inside a JSON string runs until the
context is full (minutes on two CPU cores). The model pretty-prints its JSON,
so one call with one argument already takes about 170 tokens: 256 cut valid
calls, 512 only cuts runaway loops. --num-predict changes it. The tool definitions are sent as
written: `Client.chat()` rebuilds tools through its pydantic model, which
drops `format`, nested `properties`, `minimum` and other keywords it does
not model, so the body is posted with the client's own request method
(`_request_raw`, same transport and errors) and the answer is read back
with its `ChatResponse`.

Usage: bench/toolcalls/run --help
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import ollama
from ollama._types import ChatResponse

import calibration
import cases as caselib
import checker

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from services import Service, free_port, http_get, real_upstream_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ROWS = {
    "a": "(ref-a) plain envelope direct",
    "b": "(ref-b) augur, no repair/retry/loop-breaking",
    "augur": "augur (default policies)",
    "augur-small": "augur, small-model rules (tools.small_model: true)",
    "augur-text": "augur, text mode (tools.mode: text)",
    "augur-small-auto": "augur, small-model rules on unsure calls (tools.small_model: auto)",
    "augur-conf": "augur (default policies), confidence scored, streamed",
    "native": "(ref-native) tools model direct (Ollama's parser)",
    "augur-native": "augur (default policies), tools model",
}
# Rows that ask the tool-capable model name with `tools` and read native tool_calls.
NATIVE_ROWS = {"native", "augur-native"}
REF_B_POLICY = {"validate": {"repair": False, "max_retries": 0},
                "tools": {"loop_breaker": False, "drop_ungrounded": False,
                          "answer_unrelated": False}}
# The `defaults:` block of each row's policy file, and its name in notes.
ROW_POLICIES = {
    "b": ("ref-b", REF_B_POLICY),
    "augur-small": ("augur-small", {"tools": {"small_model": True}}),
    "augur-text": ("augur-text", {"tools": {"mode": "text"}}),
    "augur-small-auto": ("augur-small-auto", {"tools": {"small_model": "auto"}}),
    "augur-conf": ("augur-conf", {"confidence": {"threshold": 0.5}}),
}
# Rows whose requests are streamed (the done chunk carries each call's signals).
STREAMED_ROWS = {"augur-conf"}
DEFAULT_ROWS = "a,b,augur,augur-small,augur-text"
OPTIONS = {"temperature": 0, "seed": 42}
NUM_PREDICT = 512


def log(msg: str) -> None:
    sys.stderr.write(f"[toolcalls {time.strftime('%H:%M:%S')}] {msg}\n")
    sys.stderr.flush()


# --- processes -------------------------------------------------------------------


class Upstream:
    """llama-server + the Ollama front (model-server/ollama_front), as scripts/real-upstream starts
    them, on ports kept across restarts; or an external URL that is never restarted."""

    def __init__(self, log_dir: Path, external: str | None = None):
        self.log_dir, self.external = log_dir, external
        self.llama: Service | None = None
        self.front: Service | None = None
        self.starts = 0
        if external:
            self.url = external.rstrip("/")
            return
        self.env = real_upstream_env()
        for key in ("AUGUR_LLAMA_SERVER", "AUGUR_GGUF"):
            if not Path(self.env[key]).is_file():
                raise SystemExit(f"real upstream not built ({self.env[key]} missing): run scripts/real-upstream build")
        self.model = self.env["AUGUR_MODEL"]
        self.tools_model = self.env.get("AUGUR_TOOLS_MODEL") or ""
        self.llama_port, self.front_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.front_port}"

    def restart(self) -> None:
        if self.external:
            return
        self.stop()
        self.starts += 1
        e = self.env
        self.llama = Service(f"llama-server-{self.starts}", [
            e["AUGUR_LLAMA_SERVER"], "-m", e["AUGUR_GGUF"], "--no-jinja", "--chat-template", "gemma",
            "--host", "127.0.0.1", "--port", self.llama_port, "-c", "4096", "-t", "1", "-np", "1",
            "--alias", self.model], self.log_dir)
        llama_url = f"http://127.0.0.1:{self.llama_port}"
        self.llama.wait_ready(llama_url + "/health", 180)
        self.front = Service(f"ollama-front-{self.starts}", [
            e["AUGUR_PYTHON"], ROOT / "model-server" / "ollama_front", "--port", self.front_port,
            "--llama-url", llama_url, "--model", self.model, "--gguf", e["AUGUR_GGUF"]]
            + (["--tools-model", self.tools_model] if self.tools_model else []), self.log_dir)
        self.front.wait_ready(self.url + "/api/version", 60)

    def stop(self) -> None:
        for svc in (self.front, self.llama):
            if svc:
                svc.stop()
        self.front = self.llama = None


class Augur:
    """augur in front of `upstream_url`, with its own policies directory."""

    def __init__(self, binary: Path, upstream_url: str, log_dir: Path, name: str):
        self.policies = Path(tempfile.mkdtemp(prefix=f"{name}-policies-", dir=log_dir))
        port, admin = free_port(), free_port()
        self.url, self.admin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{admin}"
        env = {k: v for k, v in os.environ.items() if k != "AUGUR_CONFIG"}
        self.svc = Service(name, [binary, "--listen", f"127.0.0.1:{port}", "--admin-listen",
                                  f"127.0.0.1:{admin}", "--upstream", upstream_url,
                                  "--policies", self.policies], log_dir, env=env)
        self.svc.wait_ready(self.admin + "/-/healthy", 60)
        self._writes = 0

    def stop(self) -> None:
        self.svc.stop()

    # policies ---------------------------------------------------------------

    def policy_status(self) -> dict:
        status, body = http_get(self.admin + "/-/policies")
        if status != 200:
            raise RuntimeError(f"GET /-/policies answered {status}: {body[:200]}")
        return json.loads(body)

    def try_policy(self, defaults: dict, timeout: float = 20.0) -> tuple[bool, str | None]:
        """Write `defaults` as the policy file; (accepted, error) once augur has reloaded."""
        before = self.policy_status()
        self._writes += 1
        # A comment makes every write a new text, so an accepted one always changes the version.
        text = f"# tool-call benchmark, write {self._writes}\n" + json.dumps({"defaults": defaults}) + "\n"
        tmp = self.policies / ".bench.tmp"
        tmp.write_text(text)
        tmp.rename(self.policies / "10-bench.yaml")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.policy_status()
            if now["version"] != before["version"]:
                return True, None
            if now.get("last_error") and now.get("last_error_at") != before.get("last_error_at"):
                return False, now["last_error"].replace(f"{self.policies}/", "")
        raise RuntimeError(f"augur did not reload {self.policies / '10-bench.yaml'} within {timeout}s")

    def apply_policy(self, wanted: dict) -> dict:
        """Apply as much of `wanted` (a `defaults:` block) as this augur accepts:
        {"applied": [dotted keys], "rejected": {dotted key: error}, "effective": ...}."""
        leaves = _flatten(wanted)
        ok, err = self.try_policy(wanted)
        if ok:
            return {"applied": [k for k, _ in leaves], "rejected": {}, "effective": self._effective()}
        log(f"policy rejected whole ({err}); trying its keys one by one")
        accepted, rejected = [], {}
        for key, value in leaves:
            ok, e = self.try_policy(_unflatten([(key, value)]))
            if ok:
                accepted.append((key, value))
            else:
                rejected[key] = e
        ok, err = self.try_policy(_unflatten(accepted))
        if not ok:
            raise RuntimeError(f"the accepted keys together were rejected: {err}")
        return {"applied": [k for k, _ in accepted], "rejected": rejected, "effective": self._effective()}

    def _effective(self) -> Any:
        return self.policy_status().get("effective")

    # metrics ----------------------------------------------------------------

    def metrics(self) -> dict[tuple[str, str], float]:
        status, body = http_get(self.admin + "/metrics")
        return parse_prometheus(body) if status == 200 else {}


def _flatten(d: dict, prefix: str = "") -> list[tuple[str, Any]]:
    out = []
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out += _flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out


def _unflatten(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        node = out
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_prometheus(text: str) -> dict[tuple[str, str], float]:
    out = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            try:
                out[(m.group(1), m.group(2) or "")] = float(m.group(3))
            except ValueError:
                pass
    return out


# A counter of model calls, if this augur has one; otherwise the calls are
# counted from the request's upstream timing, retries and degraded schemas.
_CALLS_COUNTER = re.compile(r"^augur_upstream_(calls|attempts|requests)_total$")


def metric_sum(m: dict, name: str) -> float:
    return sum(v for (n, _), v in m.items() if n == name)


def upstream_calls(before: dict, after: dict) -> tuple[float, str]:
    """Model calls between two scrapes, and how they were counted."""
    names = {n for (n, _) in after if _CALLS_COUNTER.match(n)}
    if names:
        return sum(metric_sum(after, n) - metric_sum(before, n) for n in names), "+".join(sorted(names))
    def d(n: str) -> float:
        return metric_sum(after, n) - metric_sum(before, n)
    base = d("augur_upstream_duration_seconds_count")
    if base <= 0:
        return 0.0, "augur_upstream_duration_seconds_count"
    return (base + d("augur_retries_total") + d("augur_format_degraded_total"),
            "augur_upstream_duration_seconds_count + augur_retries_total + augur_format_degraded_total")


# --- requests ---------------------------------------------------------------------


def post_chat(client: ollama.Client, body: dict) -> tuple[dict, ChatResponse, httpx.Headers]:
    """POST /api/chat through the client's own request path (see the module docs)."""
    r = client._request_raw("POST", "/api/chat", json=body)
    data = r.json()
    return data, ChatResponse(**data), r.headers


def options(num_predict: int) -> dict:
    return {**OPTIONS, "num_predict": num_predict} if num_predict > 0 else dict(OPTIONS)


def direct_body(case: dict, model: str, opts: dict) -> dict:
    """ref-a: the simplest emulation, sent straight to the upstream."""
    names, lines = [], []
    for t in case["tools"]:
        fn = t["function"]
        names.append(fn["name"])
        props = (fn.get("parameters") or {}).get("properties") or {}
        lines.append(f"- {fn['name']}({', '.join(props)}): {fn.get('description', '')}")
    instruction = ("You can use these tools:\n" + "\n".join(lines) + "\n"
                   'To call a tool reply {"tool_call": {"name": ..., "arguments": {...}}}; '
                   'otherwise reply {"response": "<your answer>"}.')
    fmt = {"anyOf": [
        {"type": "object", "properties": {"tool_call": {
            "type": "object",
            "properties": {"name": {"type": "string", "enum": names}, "arguments": {"type": "object"}},
            "required": ["name", "arguments"]}}, "required": ["tool_call"]},
        {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]},
    ]}
    messages: list[dict] = []
    for m in case["messages"]:
        role = m.get("role")
        if role == "system" and not messages:
            messages.append({"role": "system", "content": instruction + "\n\n" + m.get("content", "")})
            continue
        if not messages:
            messages.append({"role": "system", "content": instruction})
        if role == "assistant" and m.get("tool_calls"):
            text = "\n".join(json.dumps({"tool_call": {"name": c["function"]["name"],
                                                       "arguments": c["function"].get("arguments") or {}}})
                             for c in m["tool_calls"])
            messages.append({"role": "assistant", "content": text})
        elif role == "tool":
            messages.append({"role": "user", "content": f"Result of {m.get('tool_name', 'the tool')}: {m.get('content', '')}"})
        else:
            messages.append({k: v for k, v in m.items() if k in ("role", "content", "images")})
    return {"model": model, "messages": messages, "format": fmt, "stream": False, "options": opts}


def read_direct(content: str) -> tuple[list[dict], str, str | None]:
    """(calls, answer, malformed) from a ref-a reply."""
    try:
        v = json.loads(content)
    except json.JSONDecodeError as e:
        return [], "", f"not JSON ({e.msg} at {e.pos} of {len(content)})"
    if isinstance(v, dict) and isinstance(v.get("tool_call"), dict):
        c = v["tool_call"]
        return [{"name": c.get("name"), "arguments": c.get("arguments")}], "", None
    if isinstance(v, dict) and isinstance(v.get("response"), str):
        return [], v["response"], None
    return [], "", "neither a tool_call nor a response"


def augur_body(case: dict, model: str, opts: dict, stream: bool = False) -> dict:
    return {"model": model, "messages": case["messages"], "tools": case["tools"], "stream": stream,
            "options": opts}


def confidence_headers(headers: httpx.Headers) -> dict | None:
    """What augur said of a whole answer's confidence, when it scored it."""
    if "x-augur-confidence" not in headers:
        return None
    answer = headers["x-augur-confidence"]
    calls = []
    for item in filter(None, (p.strip() for p in headers.get("x-augur-confidence-calls", "").split(","))):
        name, _, value = item.rpartition("=")
        calls.append({"name": name, "min": float(value)})
    below = headers.get("x-augur-confidence-below")
    return {"answer": None if answer == "unknown" else float(answer), "calls": calls,
            "below": float(below) if below else None, "from": "headers"}


def read_stream(client: ollama.Client, body: dict, out: dict) -> None:
    """POST a streamed /api/chat through the client's transport; fill `out`
    from its chunks: the text, the calls, and the done chunk's fields
    (the client's ChatResponse drops the fields it does not model)."""
    with client._client.stream("POST", "/api/chat", json=body) as r:
        if r.status_code != 200:
            r.read()
            raise ollama.ResponseError(r.text, r.status_code)
        out["status"], out["attempts_header"] = 200, r.headers.get("x-augur-attempts")
        chunks = 0
        for line in r.iter_lines():
            if not line.strip():
                continue
            part = json.loads(line)
            chunks += 1
            if part.get("error"):
                out["malformed"] = f"the stream ended with an error line: {part['error']}"[:300]
                break
            resp = ChatResponse(**part)
            out["content"] += resp.message.content or ""
            out["calls"] += [{"name": tc.function.name, "arguments": dict(tc.function.arguments)}
                             for tc in (resp.message.tool_calls or [])]
            if part.get("done"):
                out["done"], out["done_reason"] = True, part.get("done_reason")
                out["eval_count"] = part.get("eval_count")
                if "augur_confidence" in part:
                    c = part["augur_confidence"]
                    out["confidence"] = {"answer": c if isinstance(c, (int, float)) else None,
                                         "calls": part.get("augur_confidence_calls") or [],
                                         "below": part.get("augur_confidence_below"), "from": "done chunk"}
        out["raw"] = {"chunks": chunks}
        if out["done"] is None and not out["malformed"]:
            out["done"] = False


def read_whole(client: ollama.Client, body: dict, direct: bool, out: dict) -> None:
    """POST a whole /api/chat; fill `out` from the answer and augur's headers."""
    data, resp, headers = post_chat(client, body)
    out["status"], out["raw"] = 200, data
    out["done_reason"], out["done"] = resp.done_reason, data.get("done")
    out["attempts_header"] = headers.get("x-augur-attempts")
    out["eval_count"] = data.get("eval_count")
    if (c := confidence_headers(headers)) is not None:
        out["confidence"] = c
    content = resp.message.content or ""
    if direct:
        out["calls"], out["content"], out["malformed"] = read_direct(content)
        out["model_text"] = content
    else:
        out["content"] = content
        out["calls"] = [{"name": tc.function.name, "arguments": dict(tc.function.arguments)}
                        for tc in (resp.message.tool_calls or [])]


def ask(client: ollama.Client, body: dict, direct: bool) -> dict:
    """One question; the outcome the checker reads (and, where augur
    scored the answer, its `confidence`)."""
    out: dict[str, Any] = {"status": None, "calls": [], "content": "", "malformed": None, "error": None,
                           "done_reason": None, "done": None, "raw": None, "attempts_header": None}
    t0 = time.monotonic()
    try:
        if body.get("stream"):
            read_stream(client, body, out)
        else:
            read_whole(client, body, direct, out)
    except ollama.ResponseError as e:
        out["status"], out["error"] = e.status_code, str(e.error)
    except httpx.TimeoutException as e:
        out["error"] = f"timeout: {type(e).__name__}"
    except httpx.HTTPError as e:
        out["error"] = f"{type(e).__name__}: {e}"
    except (ValueError, TypeError) as e:  # an answer the client could not read
        out["status"], out["malformed"] = 200, f"unreadable answer: {e}"[:300]
    out["latency_s"] = time.monotonic() - t0
    return out


# --- rows --------------------------------------------------------------------------


class Run:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.t0 = time.monotonic()
        self.log_dir = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="augur-toolcalls-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.upstream = Upstream(self.log_dir, args.upstream)
        self.model = args.model or getattr(self.upstream, "model", None) or "gemma3:270m"
        self.tools_model = (args.tools_model or getattr(self.upstream, "tools_model", None)
                            or "gemma3-tools:270m")
        self.notes: list[str] = []
        self.counting: set[str] = set()

    def over_budget(self) -> bool:
        return time.monotonic() - self.t0 > self.args.budget

    def row(self, key: str, selected: list[dict]) -> tuple[list[dict], list[dict], float]:
        log(f"row {key}: {ROWS[key]} ({len(selected)} cases)")
        started = time.monotonic()
        self.upstream.restart()
        augur = None
        try:
            if key in ("a", "native"):
                host = self.upstream.url
            else:
                augur = Augur(self.args.augur_bin, self.upstream.url, self.log_dir, f"augur-{key}")
                host = augur.url
                if key in ROW_POLICIES:
                    name, policy = ROW_POLICIES[key]
                    res = augur.apply_policy(policy)
                    note = f"{name} policy applied: " + (", ".join(
                        f"{k}={json.dumps(v)}" for k, v in _flatten(policy) if k in res["applied"]) or "none")
                    if res["rejected"]:
                        note += "; not accepted by this augur (left out): " + ", ".join(res["rejected"])
                        first = next(iter(res["rejected"].values()))
                        note += f" (GET /-/policies: {first})"
                    self.notes.append(note)
                    log(note)
            client = ollama.Client(host=host, timeout=httpx.Timeout(self.args.timeout, connect=10.0))
            outcomes, scores = [], []
            for i, case in enumerate(selected, 1):
                if self.over_budget():
                    self.notes.append(f"{ROWS[key]}: time budget ({self.args.budget:.0f} s) reached; "
                                      f"{len(selected) - i + 1} cases not run")
                    break
                opts = options(self.args.num_predict)
                if key == "a":
                    body = direct_body(case, self.model, opts)
                else:
                    body = augur_body(case, self.tools_model if key in NATIVE_ROWS else self.model, opts,
                                      stream=key in STREAMED_ROWS)
                before = augur.metrics() if augur else None
                o = ask(client, body, direct=(key == "a"))
                if augur:
                    o["upstream_calls"], how = self._calls_after(augur, before)
                    self.counting.add(how)
                else:
                    o["upstream_calls"] = 1.0
                s = checker.score(case, o)
                outcomes.append({"id": case["id"], **o})
                scores.append(s)
                mark = "exact" if s["exact_args"] else ("ok-form" if s["well_formed"] else "bad")
                log(f"  [{key} {i}/{len(selected)}] {case['id']}: {mark} "
                    f"({o['latency_s']:.1f} s, calls {o['upstream_calls']:.0f})"
                    + (f" {o['status']} {str(o['error'])[:80]}" if o["status"] != 200 else ""))
                if o["status"] is None and "timeout" in str(o["error"]):
                    log("  request timed out; restarting the upstream so the next case starts clean")
                    self.upstream.restart()
            return outcomes, scores, time.monotonic() - started
        finally:
            if augur:
                augur.stop()

    def _calls_after(self, augur: Augur, before: dict) -> tuple[float, str]:
        # augur records a request's metrics when its body has been sent: wait for it.
        want = metric_sum(before, "augur_requests_total") + 1
        deadline = time.monotonic() + 3
        after = augur.metrics()
        while metric_sum(after, "augur_requests_total") < want and time.monotonic() < deadline:
            time.sleep(0.05)
            after = augur.metrics()
        return upstream_calls(before, after)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/toolcalls/run", description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default=DEFAULT_ROWS,
                   help=f"comma list of {', '.join(ROWS)} (default: all)")
    p.add_argument("--cases", type=int, metavar="N", help="only N cases, taken in turn from each category")
    p.add_argument("--category", help="only these categories (comma list): " + ", ".join(checker.CATEGORIES))
    p.add_argument("--augur-bin", type=Path, default=ROOT / "target" / "release" / "augur")
    p.add_argument("--cases-file", type=Path, action="append",
                   help="case file(s) instead of bench/toolcalls/cases_*.json")
    p.add_argument("--upstream", help="use this Ollama-compatible URL instead of starting llama-server "
                                      "(never restarted)")
    p.add_argument("--model", help="model name (default: the real upstream's, gemma3:270m)")
    p.add_argument("--tools-model", help="the tool-capable model name of the native rows "
                                         "(default: the real upstream's, gemma3-tools:270m)")
    p.add_argument("--num-predict", type=int, default=NUM_PREDICT,
                   help=f"options.num_predict of every request (default {NUM_PREDICT}; 0: not sent)")
    p.add_argument("--timeout", type=float, default=300.0, help="per-request timeout, s (default 300)")
    p.add_argument("--budget", type=float, default=4 * 3600.0,
                   help="total time budget, s; cases past it are not run (default 14400)")
    p.add_argument("--out", help="directory for logs and results.json (default: a new temporary one)")
    p.add_argument("--fallback-row", default=calibration.FALLBACK_ROW,
                   help="the row whose answers stand in for a fallback in the sweep printed after an "
                        f"{calibration.PRIMARY_ROW} row (default {calibration.FALLBACK_ROW})")
    p.add_argument("--rescore", type=Path, metavar="RESULTS_JSON",
                   help="run nothing: score the answers of an earlier run's results.json again")
    args = p.parse_args(argv)
    args.row_keys = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in args.row_keys if r not in ROWS]
    if unknown:
        p.error(f"unknown row(s) {', '.join(unknown)}; choose from {', '.join(ROWS)}")
    args.categories = [c.strip() for c in args.category.split(",")] if args.category else None
    if args.categories:
        bad = [c for c in args.categories if c not in checker.CATEGORIES]
        if bad:
            p.error(f"unknown category {', '.join(bad)}")
    if not args.augur_bin.is_absolute():
        args.augur_bin = Path.cwd() / args.augur_bin
    if not args.rescore and any(r not in ("a", "native") for r in args.row_keys) and not os.access(args.augur_bin, os.X_OK):
        p.error(f"augur binary not found at {args.augur_bin}: cargo build --release, or pass --augur-bin")
    return args


def print_report(details: dict, results: dict[str, list[dict]], path: Path,
                 cases_by_id: dict[str, dict] | None = None) -> None:
    model = details["model"] + (f" / {details['tools_model']} (native rows)" if details.get("tools_model") else "")
    print(f"### Tool-call quality ({details['started'][:10]}, model {model}, "
          f"{details['n_cases']} cases, options {json.dumps(details['options'])})\n")
    print(checker.tables(results, ROWS))
    for note in details["notes"]:
        print(f"- {note}")
    if details.get("counting"):
        print(f"- augur's upstream calls counted from /metrics: {'; '.join(details['counting'])}")
    print("- time per row: " + ", ".join(f"{ROWS[k]} {r['seconds']:.0f} s" for k, r in details["rows"].items()))
    print(f"- total run time: {details['seconds']:.0f} s")
    print(f"- per-case results: {path}")
    if cases_by_id is not None and calibration.PRIMARY_ROW in details["rows"]:
        print("\n" + calibration.report(details, cases_by_id, fallback=details.get("fallback_row")
                                        or calibration.FALLBACK_ROW))


def rescore(path: Path, case_files: list[Path] | None, fallback_row: str) -> int:
    """Score the answers of an earlier run again with the current checker and cases."""
    details = json.loads(path.read_text())
    details["fallback_row"] = fallback_row
    by_id = {c["id"]: c for c in caselib.load(case_files)}
    results = {}
    for key, row in details["rows"].items():
        scores = []
        for entry in row["cases"]:
            outcome = {k: v for k, v in entry.items() if k not in ("id", "score")}
            entry["score"] = checker.score(by_id[entry["id"]], outcome)
            scores.append(entry["score"])
        results[key] = scores
    details["notes"] = details["notes"] + [f"re-scored on {dt.date.today().isoformat()} with the current checker"]
    print_report(details, results, path, by_id)
    return 0


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.rescore:
        return rescore(args.rescore, args.cases_file, args.fallback_row)
    selected = caselib.select(caselib.load(args.cases_file), args.categories, args.cases)
    if not selected:
        raise SystemExit("no cases selected")
    run = Run(args)
    log(f"{len(selected)} cases, rows {', '.join(args.row_keys)}, model {run.model}, "
        f"upstream {args.upstream or 'llama-server (restarted per row)'}; logs in {run.log_dir}")
    results: dict[str, list[dict]] = {}
    details: dict[str, Any] = {"started": dt.datetime.now().isoformat(timespec="seconds"), "argv": argv,
                               "model": run.model, "options": options(args.num_predict),
                               **({"tools_model": run.tools_model}
                                  if NATIVE_ROWS & set(args.row_keys) else {}),
                               "n_cases": len(selected), "fallback_row": args.fallback_row, "rows": {}}
    try:
        for key in args.row_keys:
            outcomes, scores, took = run.row(key, selected)
            results[key] = scores
            details["rows"][key] = {"label": ROWS[key], "seconds": took,
                                    "cases": [{**o, "score": s} for o, s in zip(outcomes, scores)]}
    finally:
        run.upstream.stop()
    details["notes"], details["counting"] = run.notes, sorted(run.counting)
    details["seconds"] = time.monotonic() - run.t0
    path = run.log_dir / "results.json"
    path.write_text(json.dumps(details, indent=1, default=str))
    print_report(details, results, path, {c["id"]: c for c in selected})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
