"""The workload, the same for every row: multi-turn conversations, their turns overlapping,
under one long system prompt, each with its own first message (a support ticket); then many
distinct short conversations at once. Every text is generated from fixed word lists, so every row and every
repetition sends the same first turns."""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from urllib.parse import urlparse

TOPICS = ["billing", "refunds", "shipping", "returns", "warranty", "passwords", "two-factor login",
          "invoices", "subscriptions", "gift cards", "damaged parcels", "address changes", "exports",
          "data deletion", "accessibility", "mobile app crashes", "API keys", "rate limits",
          "outages", "price matching", "bulk orders", "tax exemption", "student discounts"]
ACTIONS = ["checks the order history first", "quotes the exact policy paragraph",
           "asks for the order number before anything else", "offers a callback within one day",
           "never promises a date it cannot keep", "links the help centre article",
           "escalates to the second line after two failed attempts", "confirms the customer's email",
           "writes in short plain sentences", "summarises the case in one line at the end"]
PRODUCTS = ["kettle", "router", "desk lamp", "backpack", "headset", "standing desk", "e-reader",
            "coffee grinder", "drone", "keyboard", "monitor arm", "air purifier"]
PROBLEMS = ["arrived with a cracked lid", "was charged twice", "never left the warehouse",
            "stopped working after a week", "came in the wrong colour", "is missing its charger",
            "shows an error light", "was delivered to a neighbour"]
FOLLOW_UPS = ["What should I ask the customer next?", "Can we refund it today?",
              "Which policy paragraph applies here?", "Draft a short reply to the customer.",
              "Should this go to the second line?", "What did the customer already try?",
              "Summarise the case in one sentence.", "Is a replacement better than a refund?"]


def system_prompt(rules: int) -> str:
    lines = ["You are the support assistant of a small online shop. Follow every rule below."]
    for i in range(rules):
        topic, action = TOPICS[i % len(TOPICS)], ACTIONS[(i * 7) % len(ACTIONS)]
        lines.append(f"Rule {i + 1}: when a customer writes about {topic}, the assistant {action}, "
                     f"and it keeps the tone friendly and the answer under {40 + i % 5 * 10} words.")
    return "\n".join(lines)


def first_message(conv: int, lines: int) -> str:
    rnd = random.Random(1000 + conv)
    out = [f"Ticket {4711 + conv * 97}, customer {rnd.choice(['Ada', 'Bo', 'Chen', 'Dara', 'Eli', 'Fay'])} "
           f"{rnd.randint(100, 999)}. Here is the whole thread:"]
    for k in range(lines + 2 * conv):
        product = rnd.choice(PRODUCTS)
        out.append(f"Message {k + 1}: my {product} (order {rnd.randint(10000, 99999)}) "
                   f"{rnd.choice(PROBLEMS)}; I wrote on day {rnd.randint(1, 28)} and again on day "
                   f"{rnd.randint(1, 28)}.")
    out.append("What do I do with this ticket?")
    return "\n".join(out)


def follow_up(conv: int, turn: int) -> str:
    return FOLLOW_UPS[(conv * 3 + turn) % len(FOLLOW_UPS)]


def chat(url: str, model: str, messages: list[dict], num_predict: int) -> dict:
    """One streamed /api/chat; the answer's text, time to its first token (the first chunk with
    text, else the done chunk) and the done chunk's counts."""
    u = urlparse(url)
    body = json.dumps({"model": model, "messages": messages, "stream": True,
                       "options": {"temperature": 0, "seed": 1, "num_predict": num_predict}})
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
    t0 = time.monotonic()
    conn.request("POST", "/api/chat", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"/api/chat answered {resp.status}: {resp.read()[:300]!r}")
    text, ttft, done = [], None, None
    while line := resp.readline():
        chunk = json.loads(line)
        piece = (chunk.get("message") or {}).get("content") or ""
        if ttft is None and (piece or chunk.get("done")):
            ttft = time.monotonic() - t0
        text.append(piece)
        if chunk.get("done"):
            done = chunk
            break
    conn.close()
    if done is None:
        raise RuntimeError("the stream ended without a done chunk")
    return {"answer": "".join(text), "ttft": ttft, "total": time.monotonic() - t0,
            "prompt_eval_count": done.get("prompt_eval_count", 0),
            "prompt_eval_duration": done.get("prompt_eval_duration", 0),
            "eval_count": done.get("eval_count", 0)}


def conversations(url: str, model: str, n: int, turns: int, rules: int, lines: int,
                  num_predict: int, stagger: float) -> list[dict]:
    """`n` conversations in rounds: round `t` sends turn `t` of every conversation, in an order
    shuffled with a fixed seed, `stagger` seconds apart, and waits for every answer. Turns of
    different conversations overlap, so least-loaded routing sends a conversation's turns to
    whichever upstream is less busy at that moment. The first round (every prompt cold) ends
    before the later ones start, so later turns' times do not include other conversations' cold
    prompts. One record per turn."""
    system = system_prompt(rules)
    histories = [[{"role": "system", "content": system},
                  {"role": "user", "content": first_message(c, lines)}] for c in range(n)]
    records: list[dict] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def one(conv: int, turn: int, delay: float) -> None:
        time.sleep(delay)
        try:
            r = chat(url, model, histories[conv], num_predict)
        except BaseException as e:  # reported below
            errors.append(e)
            return
        r.update(conv=conv, turn=turn, at=time.monotonic())
        histories[conv] += [{"role": "assistant", "content": r["answer"]},
                            {"role": "user", "content": follow_up(conv, turn)}]
        with lock:
            records.append(r)

    for turn in range(turns):
        order = list(range(n))
        random.Random(turn).shuffle(order)
        threads = [threading.Thread(target=one, args=(c, turn, k * stagger), daemon=True)
                   for k, c in enumerate(order)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(f"{len(errors)} turn(s) failed: {errors[0]}")
    return sorted(records, key=lambda r: r["at"])


def mixed(url: str, model: str, requests: int, concurrency: int, num_predict: int,
          sample, every: float = 0.02) -> tuple[list[dict], list[dict[str, float]]]:
    """`requests` distinct one-turn conversations (each its own short system prompt and
    question), `concurrency` at a time; `sample()` (each upstream's requests in flight) is
    read every `every` seconds meanwhile. Returns the records and the samples."""
    todo = list(range(requests))
    lock = threading.Lock()
    records: list[dict] = []
    samples: list[dict[str, float]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            try:
                samples.append(sample())
            except OSError:
                pass
            time.sleep(every)

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop(0)
            rnd = random.Random(50_000 + i)
            msgs = [{"role": "system", "content": f"You answer questions about {rnd.choice(PRODUCTS)}s "
                                                  f"for shop {i}, in one short sentence."},
                    {"role": "user", "content": f"Question {i}: my {rnd.choice(PRODUCTS)} "
                                                f"{rnd.choice(PROBLEMS)}. What now?"}]
            try:
                r = chat(url, model, msgs, num_predict)
            except BaseException as e:  # reported by the caller
                errors.append(e)
                return
            r.update(conv=i, turn=0, at=time.monotonic())
            with lock:
                records.append(r)

    s = threading.Thread(target=sampler, daemon=True)
    s.start()
    workers = [threading.Thread(target=worker, daemon=True) for _ in range(concurrency)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    s.join()
    if errors:
        raise RuntimeError(f"{len(errors)} request(s) failed: {errors[0]}")
    return records, samples
