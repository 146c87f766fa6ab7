"""Token log-probabilities, as Ollama's llama-server runner returns them.

With `"logprobs": true` Ollama asks llama-server's `/completion` for
`n_probs: max(top_logprobs, 1)` (no `post_sampling_probs`), so every streamed
event carries `completion_probabilities`: the sampled token's log-probability
before sampling (the softmax of the raw logits: no temperature, top-k/top-p or
grammar applied) and the `n_probs` most likely tokens. llm/llama_server.go
convertLogprobs keeps `token` and `logprob` (`prob` when `logprob` is 0) and
the alternatives only when `top_logprobs` > 0; server/logprob.go adds `bytes`,
the UTF-8 bytes of the token text, omitted for an empty token.
"""

from __future__ import annotations

from typing import Any

# The done chunk's metrics, which follow `logprobs` in api.ChatResponse.
_CHAT_METRICS = ("total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration",
                 "eval_count", "eval_duration")


def n_probs(req: dict[str, Any]) -> int:
    """What to ask llama-server for: `max(top_logprobs, 1)` with `logprobs`, else 0 (nothing)."""
    return max(req.get("top_logprobs") or 0, 1) if req.get("logprobs") is True else 0


def _number(p: dict[str, Any]) -> float:
    lp = float(p.get("logprob") or 0.0)
    if lp == 0 and p.get("prob"):
        lp = float(p["prob"])
    return lp


def _token(p: dict[str, Any]) -> dict[str, Any]:
    text = p.get("token") or ""
    out: dict[str, Any] = {"token": text, "logprob": _number(p)}
    if text:
        out["bytes"] = list(text.encode("utf-8"))
    return out


def convert(probs: list[dict[str, Any]] | None, include_top: bool) -> list[dict[str, Any]]:
    """convertLogprobs then toAPILogprobs: Ollama's `logprobs` list for one event's tokens."""
    result = []
    for p in probs or []:
        entry = _token(p)
        top = (p.get("top_logprobs") or p.get("top_probs") or []) if include_top else []
        if top:
            entry["top_logprobs"] = [_token(t) for t in top]
        result.append(entry)
    return result


def with_logprobs(res: dict[str, Any], logprobs: list[dict[str, Any]], chat: bool) -> dict[str, Any]:
    """`res` with its `logprobs` replaced by `logprobs` (absent when empty), where Go's struct
    puts the field: before the metrics of a chat answer, last in a generate answer."""
    out = {k: v for k, v in res.items() if k != "logprobs"}
    if not logprobs:
        return out
    if not chat:
        out["logprobs"] = logprobs
        return out
    placed: dict[str, Any] = {}
    for k, v in out.items():
        if k in _CHAT_METRICS and "logprobs" not in placed:
            placed["logprobs"] = logprobs
        placed[k] = v
    placed.setdefault("logprobs", logprobs)
    return placed
