"""Errors and the bodies each API surface wraps them in.

Handlers raise HTTPFail(status, message); the HTTP layer turns it into the
shape of the surface the request came in on, as Ollama does: `{"error": "..."}`
on /api/*, OpenAI's `{"error": {"message", "type", "param", "code"}}` on
/v1/chat/completions and /v1/responses, Anthropic's `{"type": "error",
"error": {"type", "message"}, "request_id"}` on /v1/messages.
"""

from __future__ import annotations

import secrets
from typing import Any

RUNNER_STOPPED = ("model runner has unexpectedly stopped, this may be due to resource limitations "
                  "or an internal error, check ollama server logs for details")


class HTTPFail(Exception):
    """An error answer: an HTTP status and Ollama's message for it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def oai_error(status: int, message: str) -> dict[str, Any]:
    """openai.NewError."""
    etype = {400: "invalid_request_error", 404: "not_found_error"}.get(status, "api_error")
    return {"error": {"message": message, "type": etype, "param": None, "code": None}}


ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                   404: "not_found_error", 429: "rate_limit_error", 503: "overloaded_error", 529: "overloaded_error"}


def anthropic_id(prefix: str) -> str:
    """anthropic.generateID: the prefix and 12 random bytes in hex."""
    return "%s_%s" % (prefix, secrets.token_hex(12))


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """anthropic.NewError."""
    return {"type": "error", "error": {"type": ANTHROPIC_TYPES.get(status, "api_error"), "message": message},
            "request_id": anthropic_id("req")}
