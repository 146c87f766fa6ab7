"""The status page in headless Chromium (Debian's), driven by Playwright.

augur, with an admin token, in front of the fake Ollama (whose loaded
model has a copy under another name); the page asks for the token and,
before any traffic, says no rate limit was used; then some traffic (a
plain request, a repaired one, a retried one, one answered by a fallback
model, a refused one, a stream the upstream cuts); then the page shows
live figures, every kind of event, how requests ended and the loaded
model under both its names, updates without a reload, and logs no
console error or warning and fails no request. Saves a screenshot.

    status_page.py [SCREENSHOT]

Needs target/debug/augur and target/debug/fake-ollama (CARGO_TARGET_DIR
is honoured) and /usr/bin/chromium (or $CHROMIUM). Exits non-zero on any
failure.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TOKEN = "browser-test-token"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
POLICY = """defaults:
  rate_limit: {tokens_per_minute: 1200}
models:
  limited:
    rate_limit: {requests_per_minute: 1}
  "gemma3*":
    concurrency: {max_in_flight: 2, queue_timeout_ms: 5000}
  error-500:
    fallback: {models: [gemma3], on: [upstream_error]}
"""
COPY = "team-llama"
PERSON = {"type": "object", "required": ["name", "age"],
          "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}


class Failed(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise Failed(f"{url} did not come up within {timeout:.0f} s")


def post(base: str, path: str, body: dict):
    """POST JSON; (status, headers)."""
    req = urllib.request.Request(f"{base}{path}", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        e.read()
        return e.code, e.headers


def chat(model: str, content: str = "Who?", fmt=None) -> dict:
    body = {"model": model, "stream": False, "messages": [{"role": "user", "content": content}]}
    if fmt is not None:
        body["format"] = fmt
    return body


def traffic(base: str) -> None:
    status, _ = post(base, "/api/chat", chat("gemma3", "hi"))
    if status != 200:
        raise Failed(f"plain request: {status}")
    _, h = post(base, "/api/chat", chat("bad-json", fmt=PERSON))
    if not h.get("x-augur-repaired"):
        raise Failed("the bad-json answer was not repaired")
    _, h = post(base, "/api/chat", chat("invalid-then-valid", fmt=PERSON))
    if h.get("x-augur-attempts") != "2":
        raise Failed("the invalid-then-valid answer was not retried")
    status, h = post(base, "/api/chat", chat("error-500", fmt=PERSON))
    if not h.get("x-augur-fallback"):
        raise Failed(f"error-500 did not fall back ({status})")
    limited = {"model": "limited", "prompt": "hi", "stream": False}
    post(base, "/api/generate", limited)
    status, _ = post(base, "/api/generate", limited)
    if status != 429:
        raise Failed(f"the second limited request: {status}, not 429")
    # A stream the upstream cuts: a 200 that ends with an error line.
    cut = {"model": "stream-cut", "messages": [{"role": "user", "content": "hi"}]}
    status, _ = post(base, "/api/chat", cut)
    if status != 200:
        raise Failed(f"the cut stream: {status}, not 200")


def start_stack(ports: dict, logs: str) -> list:
    policies = tempfile.mkdtemp(prefix="augur-browser-policies-")
    Path(policies, "limits.yaml").write_text(POLICY)
    log = lambda name: open(os.path.join(logs, name), "w")  # noqa: E731
    # Its first model is the one loaded; a copy serves under another name.
    fake = subprocess.Popen([str(BIN / "fake-ollama"), "--listen", f"127.0.0.1:{ports['fake']}",
                             "--copy", f"llama3.2={COPY}"],
                            stdout=log("fake.log"), stderr=subprocess.STDOUT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUGUR_")}
    env["AUGUR_ADMIN_TOKEN"] = TOKEN
    augur = subprocess.Popen(
        [str(BIN / "augur"),
         "--listen", f"127.0.0.1:{ports['proxy']}",
         "--admin-listen", f"127.0.0.1:{ports['admin']}",
         "--upstream", f"http://127.0.0.1:{ports['fake']}",
         "--policies", policies],
        stdout=log("augur.log"), stderr=subprocess.STDOUT, env=env, cwd=logs)
    return [augur, fake]


def figure(page, name: str) -> int:
    return int(page.locator(f'[data-figure="{name}"]').text_content())


def check_page(admin: str, proxy: str, screenshot: Path) -> None:
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1360, "height": 1000},
                                          color_scheme="light")
            page = context.new_page()
            page.on("console", lambda m: m.type in ("error", "warning")
                    and problems.append(f"console {m.type}: {m.text}"))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
            page.on("response", lambda r: r.status >= 400
                    and problems.append(f"HTTP {r.status}: {r.url}"))

            page.goto(f"{admin}/-/status")
            page.locator("#login").wait_for(state="visible", timeout=10_000)
            page.fill("#token", TOKEN)
            page.click("#login button[type=submit]")
            page.locator("#main").wait_for(state="visible", timeout=10_000)
            # Before any traffic no rate limit was used, and the page says so.
            unused = page.locator("#rate-usage tbody td").first.text_content()
            if unused != "no request limit used lately":
                raise Failed(f'the unused rate limits read "{unused}"')
            traffic(proxy)
            for kind in ("refusal", "repair", "retry", "fallback"):
                page.locator(f'#events tr[data-kind="{kind}"]').first.wait_for(timeout=10_000)
            page.locator("#budgets tbody .bar").first.wait_for(timeout=10_000)
            page.locator("#rate-usage tbody .bar").first.wait_for(timeout=10_000)
            page.locator("#queues tbody td", has_text="gemma3").first.wait_for(timeout=10_000)
            # The fake's loaded models (`/api/ps`, read at start, then every 10 s).
            page.locator("#upstreams td ul li").first.wait_for(timeout=15_000)
            loaded = page.locator("#upstreams td ul li strong").first.text_content()
            if loaded != f"llama3.2:latest, {COPY}:latest":
                raise Failed(f'the loaded model is named "{loaded}", not by both its names')
            page.wait_for_function(
                "() => Number(document.querySelector('[data-figure=\"upstream cut\"]')"
                ".textContent) === 1", timeout=10_000)
            requests = figure(page, "requests")
            if requests < 6:
                raise Failed(f"the request count shows {requests}, not at least 6")
            if figure(page, "refusals") != 1:
                raise Failed(f"the refusal count shows {figure(page, 'refusals')}, not 1")
            detail = page.locator('#events tr[data-kind="refusal"] td').nth(4).text_content()
            if "429" not in detail:
                raise Failed(f'the refusal reads "{detail}"')
            if page.locator("#state").text_content() != "live":
                raise Failed("the page is not live")
            # Live: another request shows up without a reload.
            if post(proxy, "/api/chat", chat("gemma3", "again"))[0] != 200:
                raise Failed("the second plain request failed")
            page.wait_for_function(
                "n => Number(document.querySelector('[data-figure=\"requests\"]').textContent) > n",
                arg=requests, timeout=10_000)
            page.screenshot(path=str(screenshot), full_page=True)
            # The token stays in the tab: a reload goes straight to the figures.
            page.reload()
            page.locator("#main").wait_for(state="visible", timeout=10_000)
            if not page.locator("#login").is_hidden():
                raise Failed("the reloaded page asked for the token again")
        finally:
            browser.close()
    if problems:
        raise Failed("the page had problems:\n  " + "\n  ".join(problems))


def main() -> int:
    screenshot = Path(sys.argv[1] if len(sys.argv) > 1 else "status-page.png").resolve()
    for name in ("augur", "fake-ollama"):
        if not (BIN / name).exists():
            print(f"status page: {BIN / name} is missing: run cargo build --bins", file=sys.stderr)
            return 1
    if not os.path.exists(CHROMIUM):
        print(f"status page: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 1
    ports = {"fake": free_port(), "proxy": free_port(), "admin": free_port()}
    logs = tempfile.mkdtemp(prefix="augur-browser-")
    procs = start_stack(ports, logs)
    started = time.time()
    try:
        wait_http(f"http://127.0.0.1:{ports['fake']}/")
        wait_http(f"http://127.0.0.1:{ports['admin']}/-/healthy")
        check_page(f"http://127.0.0.1:{ports['admin']}", f"http://127.0.0.1:{ports['proxy']}",
                   screenshot)
    except Exception as e:  # noqa: BLE001 - every failure fails the run
        print(f"status page: FAILED: {e}\n(logs in {logs})", file=sys.stderr)
        return 1
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    print(f"status page: ok in {time.time() - started:.1f} s; screenshot {screenshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
