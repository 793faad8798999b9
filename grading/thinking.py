"""A reasoning model's answer is what it writes after its thinking (<think> ... </think>)."""

from __future__ import annotations

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def after_thinking(response: str) -> str | None:
    """The text after the last </think> (a box, an answer line or a program inside the thinking is a draft);
    None when a <think> block never closes (no answer was given); the response itself when it has no thinking."""
    closing = response.rfind(THINK_CLOSE)
    if closing >= 0:
        return response[closing + len(THINK_CLOSE):]
    return None if THINK_OPEN in response else response
