"""Math judges: equivalence through the math verifier, and AIME's integer comparison.

Both find the final answer under an extraction policy (grading.verifier.EXTRACTION_POLICIES) and return
RuleVerdicts: decided is False when no answer was found, the check timed out, or the answer did not parse,
so that grader mode rule_then_judge can hand exactly those samples to the CoT judge.

Before an AIME answer is read as an integer it is normalised as the RL reward's verifier reads it (clean,
drop a left side that names the quantity, strip a unit, unwrap \\text{}), so evaluation and reward agree on
'204 \\text{ minutes}', 'm+n=25' and '\\mathbf{25}'. A hedge or a list of answers is decided wrong.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Sequence

from evaluation.datasets import BenchmarkProblem
from grading.cot_judge import RuleVerdict, verifier_verdicts
from grading.verifier import FLEXIBLE, MathVerifier, extract_answer
from grading.verifier.answer_forms import (
    Unparsed, clean, equation_sides, is_hedged, split_top_level, strip_units, unwrap_text,
)

# Minerva's answer format: "Final Answer: The final answer is $025$. I hope it is correct."
_MINERVA_FRAME = re.compile(r"^(?:the\s+final\s+answer\s+is\s*:?\s*)?(?P<answer>.+?)[\s.]*"
                            r"I\s+hope\s+it\s+is\s+correct\W*$", re.IGNORECASE | re.DOTALL)


def judge_equivalence(pairs: Sequence[tuple[BenchmarkProblem, str]], verifier: MathVerifier,
                      extraction_policy: str = FLEXIBLE) -> list[RuleVerdict]:
    """Correct when the extracted final answer equals the reference in value (math-verify)."""
    return verifier_verdicts([(response, problem.answer) for problem, response in pairs], verifier, extraction_policy)


def without_minerva_frame(answer: str) -> str:
    """'The final answer is $025$. I hope it is correct' -> '$025$'; other answers unchanged."""
    match = _MINERVA_FRAME.match(answer.strip())
    return match.group("answer") if match else answer


def value_side(text: str) -> str:
    """'b = 70' -> '70', 'm+n=25' -> '25', 'm\\angle H = 97' -> '97': the right side of one '=' whose left side
    names the quantity (letters, no digits); other text unchanged ('x^2 = 25', 'a = b = 5')."""
    sides = equation_sides(text)
    if sides is None or re.search(r"\d", sides[0]) or not re.search(r"[a-zA-Z]", sides[0]) or not sides[1]:
        return text
    return sides[1]


def cleaned_answer(answer: str) -> str:
    """The answer cleaned as the verifier cleans it, \\text{} unwrapped, unit kept: '\\textbf{(C)}' -> '(C)',
    '6 \\, \\text{cm}' -> '6 cm'."""
    return unwrap_text(clean(without_minerva_frame(answer))).strip()


def stated_value(answer: str) -> str | None:
    """The answer as the verifier reads a value: '204 \\text{ minutes}' -> '204', 'x = 5^\\circ' -> '5',
    '\\text{25}' -> '25'. None when a word after the number changes its value ('70 \\text{ thousand}')."""
    try:
        text = strip_units(value_side(clean(without_minerva_frame(answer))))
    except Unparsed:
        return None
    return unwrap_text(text).strip()


def integer_value(answer: str | None) -> int | None:
    """'033' -> 33, '$1{,}000$' -> 1000, '12.0' -> 12; None when the answer is not an integer ('2,5', '2 5').

    Only commas, thin spaces and spaces that group thousands are separators."""
    if answer is None:
        return None
    try:
        value = Fraction(clean(answer))
    except (ValueError, ZeroDivisionError):
        return None
    return int(value) if value.denominator == 1 else None


def integer_verdict(extracted: str | None, reference: str) -> RuleVerdict:
    """One AIME answer against its reference: equal integers are correct (leading zeros allowed); a hedge or
    several answers ('2, 5', '25 or 26') are wrong; anything else that is not an integer is undecided."""
    if extracted is None:
        return RuleVerdict(False, False, "", "")
    answer = without_minerva_frame(extracted)
    if is_hedged(answer) or len([item for item in split_top_level(clean(answer), ",;") if item]) > 1:
        return RuleVerdict(False, True, extracted, "several answers")
    stated = stated_value(answer)
    value = integer_value(stated) if stated is not None else None
    if value is None:
        return RuleVerdict(False, False, extracted, "not an integer")
    return RuleVerdict(value == int(reference), True, extracted, "")


def judge_integer(pairs: Sequence[tuple[BenchmarkProblem, str]],
                  extraction_policy: str = FLEXIBLE) -> list[RuleVerdict]:
    """AIME: the extracted answer and the reference compared as integers (undecided when there is no integer)."""
    return [integer_verdict(extract_answer(response, extraction_policy), problem.answer) for problem, response in pairs]
