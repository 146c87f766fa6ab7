#!/usr/bin/env python3
"""A tool-calling conversation through augur with the official ollama client.

Gemma 3 270M has no native tool support (a plain Ollama answers such a request
with 400 "... does not support tools"); augur is what makes the call possible.
The script prints each step: the request, the model's tool call (or its plain
answer), the tool result sent back, and the final answer. Run it via
scripts/demo, which starts the upstream and augur.
"""

import argparse
import json
import sys
import time

import ollama

OPTIONS = {"temperature": 0, "seed": 42, "num_predict": 128}


def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
      city: The name of the city, for example Paris

    Returns:
      The current weather as JSON
    """
    return json.dumps({"city": city, "temperature_c": 18, "conditions": "light rain"})


TOOLS = {"get_weather": get_weather}


def show(label, text):
    print("%-12s %s" % (label, text), flush=True)


def ask(client, model, messages):
    t0 = time.monotonic()
    resp = client.chat(model, messages=messages, tools=list(TOOLS.values()), options=OPTIONS)
    show("", "(%.1f s, %s tokens, done_reason=%s)" % (time.monotonic() - t0, resp.eval_count, resp.done_reason))
    return resp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", required=True, help="augur's address, e.g. http://127.0.0.1:8080")
    ap.add_argument("--model", default="gemma3:270m")
    ap.add_argument("--question", default="What is the weather like in Paris right now?")
    args = ap.parse_args()

    client = ollama.Client(host=args.host, timeout=300)
    messages = [{"role": "user", "content": args.question}]
    show("user:", args.question)
    show("tools:", ", ".join(TOOLS))
    seen, repeated = set(), False
    try:
        resp = ask(client, args.model, messages)
        for _ in range(3):
            calls = resp.message.tool_calls or []
            keys = {(c.function.name, json.dumps(dict(c.function.arguments or {}), sort_keys=True)) for c in calls}
            if not calls or keys <= seen:
                repeated = bool(calls)
                break
            seen |= keys
            messages.append(resp.message)
            for call in calls:
                name, arguments = call.function.name, dict(call.function.arguments or {})
                show("tool call:", "%s(%s)" % (name, json.dumps(arguments)))
                fn = TOOLS.get(name)
                try:
                    result = fn(**arguments) if fn else json.dumps({"error": "unknown tool %s" % name})
                except TypeError as e:
                    result = json.dumps({"error": "bad arguments: %s" % e})
                show("tool result:", result)
                messages.append({"role": "tool", "tool_name": name, "content": result})
            resp = ask(client, args.model, messages)
    except ollama.ResponseError as e:
        show("error:", "augur answered HTTP %s: %s" % (e.status_code, e.error))
        if "does not support tools" in str(e.error):
            show("", "the request reached the model's plain capabilities: no tool emulation was applied")
        return 2
    except ollama.RequestError as e:
        show("error:", "request failed: %s" % e)
        return 2

    if repeated:
        show("result:", "the model asked for the same call again instead of answering; stopping here "
                        "(a 270M base model is easily stuck)")
        for call in resp.message.tool_calls:
            show("repeated:", "%s(%s)" % (call.function.name, json.dumps(dict(call.function.arguments or {}))))
    elif resp.message.tool_calls:
        show("result:", "the model kept calling tools; stopped after 3 rounds")
    elif len(messages) > 1:
        show("answer:", resp.message.content.strip() or "(empty)")
    else:
        show("answer:", "(no tool call; the model answered in text) %s" % (resp.message.content.strip() or "(empty)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
