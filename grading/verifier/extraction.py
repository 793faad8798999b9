"""Final-answer extraction from a model response, under a policy.

boxed: the \\boxed{} (or \\fbox{}) answer only. flexible: that, else the last answer line ("The answer is 9",
"**Answer:** $9$", "Final answer: 9"), else a last line that is only an expression ("$9$", "x = 5").
Hack-prone responses extract nothing under both: two boxes that disagree ("\\boxed{1} or \\boxed{2}"), and
responses beyond MAX_RESPONSE_CHARACTERS (the extraction itself must stay cheap).
"""

from __future__ import annotations

import re

_BOX_OPENING = re.compile(r"\\(?:boxed|fbox)\s*\{")
# "Answer: 5", "**Final Answer:** 5", "The final answer is $5$.", "answer = 5"
_ANSWER_LINE = re.compile(r"\banswer\b[*_\s]*(?:is\b[*_\s]*:?|:|=)[*_\s]*(?P<answer>.+)", re.IGNORECASE)
_MATH_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
# A last line counts as an expression when, outside LaTeX commands and \\text{}, no word of three letters is left.
_COMMANDS_AND_TEXT = re.compile(r"\\(?:text|mathrm|mbox|textbf)\s*\{[^{}]*\}|\\[a-zA-Z]+")
_WORD = re.compile(r"[a-zA-Z]{3,}")
_MAX_EXPRESSION_LINE = 200
MAX_RESPONSE_CHARACTERS = 200_000


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


def boxed_answers(text: str) -> list[str]:
    """Contents of every complete \\boxed{...} or \\fbox{...}, braces balanced, in order."""
    answers = []
    for opening in _BOX_OPENING.finditer(text):
        content = _balanced_content(text, opening.end() - 1)
        if content is not None:
            answers.append(content.strip())
    return answers


def last_boxed(text: str) -> str | None:
    """Content of the last complete \\boxed{...} or \\fbox{...}, braces balanced, or None."""
    answers = boxed_answers(text)
    return answers[-1] if answers else None


def _single_boxed(text: str) -> str | None:
    """The boxed answer when every box holds the same answer; None when boxes disagree (a hedge) or none."""
    answers = {_spacing_free(answer) for answer in boxed_answers(text)}
    if len(answers) != 1:
        return None
    return last_boxed(text)


def _spacing_free(answer: str) -> str:
    return re.sub(r"\s+|\\[,;:! ]", "", strip_math_delimiters(answer)).rstrip(".")


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


def _expression_line(response: str) -> str | None:
    """The last non-empty line when it is only an expression ("$9$", "x = 5", "\\frac{1}{2}.", "\\text{Monday}")."""
    lines = [line.strip() for line in response.splitlines() if line.strip()]
    if not lines or len(lines[-1]) > _MAX_EXPRESSION_LINE:
        return None
    answer = _clean_answer_line(lines[-1])
    if not answer or not re.search(r"[\w\\]", answer):
        return None
    if _WORD.search(_COMMANDS_AND_TEXT.sub(" ", answer)) or _BOX_OPENING.search(answer):
        return None
    return answer


def _answer_line(response: str) -> str | None:
    for line in reversed(response.splitlines()):
        match = _ANSWER_LINE.search(line)
        if match:
            answer = _clean_answer_line(match.group("answer"))
            if answer:
                return answer
    return None


def extract_answer(response: str, policy: str = FLEXIBLE) -> str | None:
    """The final answer of a response under the policy (see the module docstring), or None."""
    check_policy(policy)
    if len(response) > MAX_RESPONSE_CHARACTERS:
        return None
    if boxed_answers(response):
        return _single_boxed(response) or None
    if policy == BOXED:
        return None
    return _answer_line(response) or _expression_line(response)
