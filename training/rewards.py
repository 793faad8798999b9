"""Correctness rewards: the final answer is extracted and compared with the reference.

A rule-based checker for numeric and plain answers. The math verifier with equivalence of written
forms (math-verify) and the code sandbox arrive with the evaluation library and plug in here.
"""

from __future__ import annotations

import re
from fractions import Fraction

from training.types import PromptRecord

ANSWER_LINE = re.compile(r"answer\s*(?:is)?\s*[:=]?\s*(.+)", re.IGNORECASE)


def last_boxed(text: str) -> str | None:
    """Content of the last \\boxed{...}, braces balanced, or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, index = 0, start + len("\\boxed")
    for position in range(index, len(text)):
        if text[position] == "{":
            depth += 1
        elif text[position] == "}":
            depth -= 1
            if depth == 0:
                return text[index + 1:position]
    return None


def extract_final_answer(text: str) -> str | None:
    """The last \\boxed{} content, else the text after the last 'Answer:'."""
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip()
    matches = [match for line in text.splitlines() if (match := ANSWER_LINE.search(line.strip()))]
    return matches[-1].group(1).strip() if matches else None


def _normalise(answer: str) -> str:
    return answer.strip().strip("$").rstrip(".").replace(" ", "").replace("\\!", "").lower()


def _as_number(answer: str) -> Fraction | None:
    try:
        return Fraction(answer.replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


def answers_match(predicted: str | None, reference: str) -> bool:
    """Equal as numbers (integers, decimals, a/b) or as normalised text."""
    if predicted is None:
        return False
    left, right = _normalise(predicted), _normalise(reference)
    left_number, right_number = _as_number(left), _as_number(right)
    if left_number is not None and right_number is not None:
        return left_number == right_number
    return left == right


def correctness_reward(record: PromptRecord, response: str) -> float:
    """1.0 when the response's final answer matches the reference, else 0.0."""
    if not record.answer:
        raise ValueError(f"prompt {record.prompt_id} has no reference answer; code problems with test cases need "
                         "the sandbox reward of the evaluation library")
    return 1.0 if answers_match(extract_final_answer(response), record.answer) else 0.0
