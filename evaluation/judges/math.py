"""Math judges: equivalence through the math verifier, and AIME's integer comparison.

Both find the final answer under an extraction policy (grading.verifier.EXTRACTION_POLICIES) and return
RuleVerdicts: decided is False when no answer was found, the check timed out, or the answer did not parse,
so that grader mode rule_then_judge can hand exactly those samples to the CoT judge.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

from evaluation.datasets import BenchmarkProblem
from grading.cot_judge import RuleVerdict, verifier_verdicts
from grading.verifier import FLEXIBLE, MathVerifier, extract_answer, normalise


def judge_equivalence(pairs: Sequence[tuple[BenchmarkProblem, str]], verifier: MathVerifier,
                      extraction_policy: str = FLEXIBLE) -> list[RuleVerdict]:
    """Correct when the extracted final answer equals the reference in value (math-verify)."""
    return verifier_verdicts([(response, problem.answer) for problem, response in pairs], verifier, extraction_policy)


def integer_value(answer: str | None) -> int | None:
    """'033' -> 33, '$1{,}000$' -> 1000, '12.0' -> 12; None when the answer is not an integer."""
    if answer is None:
        return None
    text = normalise(answer).replace("{,}", "").replace(",", "").replace(" ", "")
    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None
    return int(value) if value.denominator == 1 else None


def judge_integer(pairs: Sequence[tuple[BenchmarkProblem, str]],
                  extraction_policy: str = FLEXIBLE) -> list[RuleVerdict]:
    """AIME: the extracted answer and the reference compared as integers (undecided when there is no integer)."""
    verdicts = []
    for problem, response in pairs:
        extracted = extract_answer(response, extraction_policy)
        value = integer_value(extracted)
        verdicts.append(RuleVerdict(value is not None and value == int(problem.answer), value is not None,
                                    extracted or "",
                                    "" if value is not None or extracted is None else "not an integer"))
    return verdicts
