"""Final-answer extraction from a model response, under a policy.

boxed: the \\boxed{} (or \\fbox{}) answer only. flexible: that, else the last answer line ("The answer is 9",
"**Answer:** $9$", "Final answer: 9"), else a last line that is only an expression ("$9$", "x = 5").
Hack-prone responses extract nothing under both: two boxes that disagree ("\\boxed{1} or \\boxed{2}"), and
responses beyond MAX_RESPONSE_CHARACTERS (the extraction itself must stay cheap).
"""

from __future__ import annotations

import re

_BOX_OPENING = re.compile(r"\\(?:boxed|fbox)\s*\{")
_TEXT_OPENING = re.compile(r"\\(?:text|textbf|textit|mbox|texttt)\s*\{")
_CODE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.DOTALL)
# "Answer: 5", "**Final Answer:** 5", "The final answer is $5$.", "answer = 5"
_ANSWER_LINE = re.compile(r"\banswer\b[*_\s]*(?:is\b[*_\s]*:?|:|=)[*_\s]*(?P<answer>.+)", re.IGNORECASE)
_MATH_DELIMITERS = (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
# A last line counts as an expression when, outside LaTeX commands and \\text{}, no word of three letters is left.
_COMMANDS_AND_TEXT = re.compile(r"\\(?:text|mathrm|mbox|textbf)\s*\{[^{}]*\}|\\[a-zA-Z]+")
_WORD = re.compile(r"[a-zA-Z]{3,}")
_MAX_EXPRESSION_LINE = 200
MAX_RESPONSE_CHARACTERS = 200_000


def boxed_answers(text: str, inside_text_too: bool = False) -> list[str]:
    """Contents of every complete \\boxed{...} or \\fbox{...}, braces balanced, in order of opening.

    One pass with a stack of open braces. Escaped braces (\\{ and \\}) do not count. Boxes inside code
    (fenced blocks or `inline`) are never answers; boxes inside \\text{...} only with inside_text_too
    (printed text is not a claim, but a box hidden there still makes a disagreement).
    """
    text = _CODE.sub(" ", text)
    box_braces = {match.end() - 1 for match in _BOX_OPENING.finditer(text)}
    text_braces = {match.end() - 1 for match in _TEXT_OPENING.finditer(text)}
    stack: list[int] = []  # positions of the open braces
    inside_text = 0  # open \text braces on the stack
    found: list[tuple[int, str]] = []
    position = 0
    while position < len(text):
        character = text[position]
        if character == "\\":
            position += 2
            continue
        if character == "{":
            stack.append(position)
            inside_text += position in text_braces
        elif character == "}" and stack:
            opening = stack.pop()
            inside_text -= opening in text_braces
            if opening in box_braces and (inside_text_too or not inside_text):
                found.append((opening, text[opening + 1:position].strip()))
        position += 1
    return [content for _, content in sorted(found)]


def math_spans(text: str) -> int:
    """How many $...$, \\(...\\) or \\[...\\] spans the text opens."""
    return text.replace("$$", "$").count("$") // 2 + text.count("\\(") + text.count("\\[")


def last_boxed(text: str) -> str | None:
    """Content of the last complete \\boxed{...} or \\fbox{...}, braces balanced, or None."""
    answers = boxed_answers(text)
    return answers[-1] if answers else None


def _single_boxed(text: str) -> str | None:
    """The boxed answer when every box holds the same answer; None when boxes disagree (a hedge) or none."""
    answers = {_spacing_free(answer) for answer in boxed_answers(text, inside_text_too=True)}
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
    if math_spans(lines[-1]) > 1:
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
            if math_spans(match.group("answer")) > 1:  # "Answer: $5$ $7$": two candidates
                return None
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
        answer = _single_boxed(response)
        return answer if answer and math_spans(answer) <= 1 else None
    if policy == BOXED:
        return None
    return _answer_line(response) or _expression_line(response)
