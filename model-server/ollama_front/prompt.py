"""Prompt rendering: Ollama's message collation and the gemma3 chat template."""

from __future__ import annotations

from typing import Any


def collate(msgs: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Consecutive messages of one role joined by a blank line (tool turns stay apart)."""
    out = []
    for m in msgs:
        if out and out[-1]["role"] == m["role"] and m["role"] != "tool":
            out[-1] = dict(out[-1], content=out[-1]["content"] + "\n\n" + m["content"])
        else:
            out.append({"role": m["role"], "content": m.get("content") or ""})
    return out


def render(msgs: list[dict[str, Any]]) -> str:
    """model.TEMPLATE (gemma3's) applied to Ollama's collated messages; other roles render nothing."""
    msgs = collate(msgs)
    out = []
    for i, m in enumerate(msgs):
        last = i == len(msgs) - 1
        if m["role"] in ("user", "system"):
            out.append("<start_of_turn>user\n%s<end_of_turn>\n" % m["content"])
            if last:
                out.append("<start_of_turn>model\n")
        elif m["role"] == "assistant":
            out.append("<start_of_turn>model\n%s" % m["content"] + ("" if last else "<end_of_turn>\n"))
    return "".join(out)

