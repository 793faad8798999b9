"""Final-answer extraction from a model response: the last \\boxed{} (or \\fbox{}), else the last answer line."""

from __future__ import annotations

import re

_BOX_OPENING = re.compile(r"\\(?:boxed|fbox)\s*\{")
# "Answer: 5", "**Final Answer:** 5", "The final answer is $5$.", "answer = 5"
_ANSWER_LINE = re.compile(r"\banswer\b[*_\s]*(?:is\b[*_\s]*:?|:|=)[*_\s]*(?P<answer>.+)", re.IGNORECASE)
_MATH_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))


def _balanced_content(text: str, opening_brace: int) -> str | None:
    """Text between the brace at opening_brace and its matching brace, or None when it never closes.

    Escaped braces (\\{ and \\}) do not count: a backslash and the character after it are one unit.
    """
    depth, position = 0, opening_brace
    while position < len(text):
        character = text[position]
        if character == "\\":
            position += 2
            continue
        if character == "{":
            depth += 1
        elif character == "}":
            depth -= 1
            if depth == 0:
                return text[opening_brace + 1:position]
        position += 1
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last complete \\boxed{...} or \\fbox{...}, braces balanced, or None."""
    for opening in reversed(list(_BOX_OPENING.finditer(text))):
        content = _balanced_content(text, opening.end() - 1)
        if content is not None:
            return content.strip()
    return None


def strip_math_delimiters(answer: str) -> str:
    """The answer without surrounding $...$, $$...$$, \\(...\\) or \\[...\\]."""
    answer = answer.strip()
    for opening, closing in _MATH_DELIMITERS:
        if len(answer) >= len(opening) + len(closing) and answer.startswith(opening) and answer.endswith(closing):
            return answer[len(opening):len(answer) - len(closing)].strip()
    return answer


def _clean_answer_line(answer: str) -> str:
    """'$\\frac12$.' -> '\\frac12': trailing full stop, markdown emphasis and math delimiters removed."""
    answer = answer.strip().rstrip(".").strip().strip("*_").strip()
    return strip_math_delimiters(answer).rstrip(".").strip()


BOXED = "boxed"
FLEXIBLE = "flexible"
# The extraction policies a benchmark or a run may choose; FLEXIBLE is the default.
EXTRACTION_POLICIES = (FLEXIBLE, BOXED)


def check_policy(policy: str) -> str:
    if policy not in EXTRACTION_POLICIES:
        raise ValueError(f"extraction policy must be one of {', '.join(EXTRACTION_POLICIES)}, got {policy!r}")
    return policy


def extract_answer(response: str, policy: str = FLEXIBLE) -> str | None:
    """The final answer of a response under the policy, or None.

    boxed: the last \\boxed{}/\\fbox{} content only. flexible: that, else the last answer line.
    """
    boxed = last_boxed(response)
    if boxed is not None or check_policy(policy) == BOXED:
        return boxed or None
    for line in reversed(response.splitlines()):
        match = _ANSWER_LINE.search(line)
        if match:
            answer = _clean_answer_line(match.group("answer"))
            if answer:
                return answer
    return None
