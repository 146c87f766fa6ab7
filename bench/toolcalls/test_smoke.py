"""The runner end to end, on a few scripted cases: augur + the fake Ollama.

The fake's `tool-json` model answers with the last user message, so each
case's question *is* the model's reply. Needs target/debug/fake-ollama and
target/debug/augur (`cargo build --bins`); AUGUR_BIN picks another augur.
A missing binary fails the run: nothing here is skipped.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BIN = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug"


def reply_case(id_, category, reply, expect):
    return {"id": id_, "category": category, "tools": ["get_weather", "get_time"],
            "messages": [{"role": "user", "content": reply}], "expect": expect}


LYON = {"calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}}]}
CASES = [
    reply_case("exact", "pick_one", '{"tool_call":{"name":"get_weather","arguments":{"city":"Lyon"}}}', LYON),
    reply_case("placeholder", "pick_one", '{"tool_call":{"name":"get_weather","arguments":{"city":"<city>"}}}', LYON),
    reply_case("undeclared", "pick_one", '{"tool_call":{"name":"get_forecast","arguments":{"city":"Lyon"}}}', LYON),
    reply_case("answer", "no_call", '{"response":"Paris is the capital of France."}',
               {"answer": True, "mentions": ["Paris"]}),
    # Calls written as text, for the text-mode row: a Python list, and one
    # whose argument is a name, not a literal.
    reply_case("python", "pick_one", '[get_weather(city="Lyon")]', LYON),
    reply_case("unreadable", "pick_one", "[get_weather(city=Lyon)]", LYON),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    binary = BIN / "fake-ollama"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `cargo build --bins` first", pytrace=False)
    port = free_port()
    log = open(tmp_path_factory.mktemp("fake") / "fake.log", "w")
    proc = subprocess.Popen([str(binary), "--listen", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 20
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=1)
                break
            except OSError:
                if time.time() > deadline:
                    pytest.fail("fake-ollama did not start", pytrace=False)
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


@pytest.fixture(scope="module")
def run(fake, tmp_path_factory):
    augur = Path(os.environ.get("AUGUR_BIN") or BIN / "augur")
    if not augur.is_absolute():
        augur = ROOT / augur
    if not augur.exists():
        pytest.fail(f"{augur} is missing: run `cargo build --bins` first", pytrace=False)
    work = tmp_path_factory.mktemp("run")
    cases_file = work / "cases_smoke.json"
    cases_file.write_text(json.dumps(CASES))
    out = work / "out"
    proc = subprocess.run(
        [sys.executable, str(HERE / "runner.py"), "--upstream", fake, "--model", "tool-json",
         "--rows", "a,b,augur,augur-small,augur-text,augur-small-auto,augur-conf",
         "--cases-file", str(cases_file), "--augur-bin", str(augur), "--out", str(out), "--timeout", "30"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    return proc.stdout, results


def by_id(results, row):
    return {c["id"]: c for c in results["rows"][row]["cases"]}


def test_tables_are_printed(run):
    stdout, _ = run
    for heading in ("#### pick_one", "#### no_call", "#### overall"):
        assert heading in stdout
    overall = stdout[stdout.index("#### overall"):]
    for label in ("(ref-a) plain envelope direct", "(ref-b) augur, no repair/retry/loop-breaking",
                  "augur (default policies)", "augur, small-model rules (tools.small_model: true)",
                  "augur, text mode (tools.mode: text)"):
        assert f"| {label} | {len(CASES)} |" in overall
    assert "total run time:" in stdout


def test_ref_b_policy_is_applied_as_far_as_augur_accepts_it(run):
    stdout, results = run
    note = next(n for n in results["notes"] if n.startswith("ref-b policy applied"))
    assert "validate.repair=false" in note and "validate.max_retries=0" in note
    for key in ("tools.loop_breaker", "tools.drop_ungrounded", "tools.answer_unrelated"):
        assert key in note  # applied, or listed as left out
    assert note in stdout


def test_small_model_row_turns_the_rules_on(run):
    stdout, results = run
    note = next(n for n in results["notes"] if n.startswith("augur-small policy applied"))
    assert note == "augur-small policy applied: tools.small_model=true", note
    assert note in stdout


@pytest.mark.parametrize("row", ["a", "b", "augur", "augur-small"])
def test_scores_per_row(run, row):
    cases = by_id(run[1], row)
    exact = cases["exact"]["score"]
    assert exact["well_formed"] and exact["exact_args"], cases["exact"]
    ph = cases["placeholder"]["score"]
    assert ph["placeholders"] == ["<city>"] and ph["right_tools"] and not ph["exact_args"]
    answer = cases["answer"]["score"]
    assert answer["well_formed"] and answer["exact_args"] and answer["answer_cites"]
    bad = cases["undeclared"]["score"]
    assert not bad["well_formed"] and not bad["exact_args"]
    if row == "a":
        assert all(c["upstream_calls"] == 1 for c in cases.values())
    else:
        assert bad["status_422"], cases["undeclared"]


def test_text_mode_row_reads_calls_written_as_text(run):
    stdout, results = run
    note = next(n for n in results["notes"] if n.startswith("augur-text policy applied"))
    assert note == 'augur-text policy applied: tools.mode="text"', note
    text, grammar = by_id(results, "augur-text"), by_id(results, "augur")
    python = text["python"]
    assert python["score"]["exact_args"] and python["upstream_calls"] == 1, python
    # Grammar mode cannot read it: not JSON, retried, then 422.
    assert not grammar["python"]["score"]["well_formed"]
    assert grammar["python"]["upstream_calls"] == 2
    # Text mode asks again in grammar mode; the echo is no JSON either.
    unreadable = text["unreadable"]
    assert unreadable["upstream_calls"] == 2 and unreadable["score"]["status_422"], unreadable
    # An envelope JSON reply is no call in text mode: it is the answer.
    exact = text["exact"]
    assert exact["upstream_calls"] == 1 and not exact["calls"], exact
    assert exact["content"].startswith('{"tool_call"'), exact


def test_upstream_calls_come_from_augurs_metrics(run):
    _, results = run
    b, augur = by_id(results, "b"), by_id(results, "augur")
    assert b["exact"]["upstream_calls"] == 1 and augur["exact"]["upstream_calls"] == 1
    # The same bad reply every time: augur retries once by default, ref-b never.
    assert b["undeclared"]["upstream_calls"] == 1
    assert augur["undeclared"]["upstream_calls"] == 2


def test_rescore_prints_the_same_tables(run, tmp_path):
    stdout, results = run
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps(results))
    proc = subprocess.run([sys.executable, str(HERE / "runner.py"), "--rescore", str(saved),
                           "--cases-file", str(HERE / "cases_smoke_unused.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0  # a missing case file is an error, not an empty table
    cases_file = tmp_path / "cases_smoke.json"
    cases_file.write_text(json.dumps(CASES))
    proc = subprocess.run([sys.executable, str(HERE / "runner.py"), "--rescore", str(saved),
                           "--cases-file", str(cases_file)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    tables = stdout[:stdout.index("\n- ")]
    assert proc.stdout.startswith(tables)
    assert "re-scored on" in proc.stdout


def test_confidence_row_records_every_signal_from_the_stream(run):
    stdout, results = run
    note = next(n for n in results["notes"] if n.startswith("augur-conf policy applied"))
    assert note == "augur-conf policy applied: confidence.threshold=0.5", note
    conf = by_id(results, "augur-conf")
    exact = conf["exact"]
    assert exact["score"]["exact_args"] and exact["upstream_calls"] == 1, exact
    c = exact["confidence"]
    # The fake gives every token p = 0.99; the done chunk says each call's signals.
    assert c["from"] == "done chunk" and c["answer"] == 0.99, c
    assert [k["name"] for k in c["calls"]] == ["get_weather"]
    call = c["calls"][0]
    assert call["min"] == 0.99 and call["unsure_tokens"] == 0 and call["tokens"] > 0, call
    assert exact["eval_count"] is not None
    # A plain answer is scored by its words: no calls.
    answer = conf["answer"]
    assert answer["score"]["exact_args"] and answer["confidence"]["answer"] == 0.99
    assert not answer["confidence"]["calls"]
    # Streamed, the same verdicts as the whole answers of the augur row.
    whole = by_id(results, "augur")
    for cid in ("exact", "placeholder", "answer", "undeclared"):
        assert conf[cid]["score"]["exact_args"] == whole[cid]["score"]["exact_args"], cid


def test_small_model_auto_row_records_the_confidence_headers(run):
    _, results = run
    note = next(n for n in results["notes"] if n.startswith("augur-small-auto policy applied"))
    assert note == 'augur-small-auto policy applied: tools.small_model="auto"', note
    exact = by_id(results, "augur-small-auto")["exact"]
    assert exact["score"]["exact_args"], exact
    assert exact["confidence"] == {"answer": 0.99, "calls": [{"name": "get_weather", "min": 0.99}],
                                   "below": None, "from": "headers"}


def test_calibration_tables_follow_a_confidence_row(run):
    stdout, _ = run
    report = stdout[stdout.index("### Calibration"):]
    for heading in ("#### AUROC per feature, per answer (95% bootstrap interval)", "#### Reliability",
                    "#### Sweep: primary augur (default policies), confidence scored, streamed, "
                    "fallback augur, small-model rules (tools.small_model: true)"):
        assert heading in report, report
    # 0.99 everywhere: nothing is below 0.95, so the primary keeps every answer that did not fail.
    line = next(l for l in report.splitlines() if l.startswith("| 0.95 |"))
    failed = next(l for l in report.splitlines() if l.startswith("| none (failures only) |"))
    assert line.split("|")[2:] == failed.split("|")[2:], (line, failed)
