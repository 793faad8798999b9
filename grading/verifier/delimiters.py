"""Math delimiters in written answers: $...$, $$...$$, \\(...\\) and \\[...\\].

The bottom of the verifier: extraction and the answer forms both read delimiters, so they live here,
below both, and extraction may compare answers by value without an import cycle.
"""

from __future__ import annotations

import re

_MATH_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
# One span at the start of a text; an escaped dollar (\\$18) does not close a $...$ span.
_LEADING_SPAN = re.compile(r"\$\$(?P<display>.+?)\$\$|\$(?P<inline>(?:\\.|[^$\\])+)\$|\\\((?P<paren>.+?)\\\)"
                           r"|\\\[(?P<bracket>.+?)\\\]", re.DOTALL)


def strip_math_delimiters(answer: str) -> str:
    """The answer without surrounding $...$, $$...$$, \\(...\\) or \\[...\\]."""
    answer = answer.strip()
    for opening, closing in _MATH_DELIMITERS:
        if len(answer) >= len(opening) + len(closing) and answer.startswith(opening) and answer.endswith(closing):
            return answer[len(opening):len(answer) - len(closing)].strip()
    return answer


def math_spans(text: str) -> int:
    """How many $...$, \\(...\\) or \\[...\\] spans the text opens."""
    return text.replace("$$", "$").count("$") // 2 + text.count("\\(") + text.count("\\[")


def leading_math_span(text: str, start: int = 0) -> tuple[str, int] | None:
    """(content, end) of the math span that starts at start ('$5$ cm' -> ('5', 3)), else None."""
    match = _LEADING_SPAN.match(text, start)
    if match is None:
        return None
    return match.group(match.lastgroup).strip(), match.end()
