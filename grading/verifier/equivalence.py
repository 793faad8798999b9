"""Equivalence of two written math answers: a fast path for identical strings and plain numbers, then math-verify.

math_verify and sympy are imported inside the functions that need them, so importing this module is cheap.
math_verify is always called with parsing_timeout=None and timeout_seconds=None: its default timeouts use
SIGALRM, which raises ValueError off the main thread. Nothing here bounds the time a check takes (a sympy
call can run for hours on 9^{9^{9^9}}); MathVerifier runs checks in worker processes it can kill.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

from grading.verifier.delimiters import strip_math_delimiters
from grading.verifier.answer_forms import is_hedged
from grading.verifier.fast_compare import structured_verdict

# Spacing that never changes meaning: \! \, \; \: "\ " \quad \qquad ~ and \left / \right before a delimiter.
_COSMETIC = re.compile(r"\\[!,;: ]|\\q?quad(?![a-zA-Z])|~|\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\displaystyle|\s+")
_FRACTION_COMMANDS = re.compile(r"\\[dt]frac(?![a-zA-Z])")


def normalise(answer: str) -> str:
    """The answer with math delimiters, spacing commands, \\left/\\right and a final full stop removed."""
    text = strip_math_delimiters(answer)
    text = _FRACTION_COMMANDS.sub(r"\\frac", text)
    text = _COSMETIC.sub("", text).replace("\\%", "%")
    return text.rstrip(".")


def fast_verdict(predicted: str, reference: str) -> bool | None:
    """True or False when the fast path decides (fast_compare.py), None when math-verify must."""
    return structured_verdict(predicted, reference)


def same_value(first: str, second: str) -> bool:
    """Whether the fast path finds two answers equal in value (maj@n's vote classes); an answer it cannot
    settle is not equal (math-verify is not asked: it has no time limit in this process)."""
    return fast_verdict(first, second) is True


class _DropDisabledTimeoutWarning(logging.Filter):
    """Drops math_verify's 'Timeout is disabled' warning: the timeout is enforced by killing worker processes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Timeout is disabled")


@lru_cache(maxsize=1)
def _math_verify():
    """The math_verify module, imported on first use, with its extraction configs and the warning filter."""
    import math_verify

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).addFilter(_DropDisabledTimeoutWarning())
    configs = (math_verify.LatexExtractionConfig(), math_verify.ExprExtractionConfig())
    return math_verify, configs


def _has_expression(parsed: list) -> bool:
    """Whether math_verify.parse produced a sympy object (not only its fallback string)."""
    return any(not isinstance(item, str) for item in parsed)


@lru_cache(maxsize=4096)  # a problem's reference is parsed once per worker
def parse_answer(answer: str) -> list:
    """math_verify.parse of a bare answer: as LaTeX inside $...$ first, as a plain expression if that fails.

    Returns parse's list: sympy objects, then the matched string as a fallback; empty when nothing matched.
    """
    math_verify, configs = _math_verify()
    text = strip_math_delimiters(answer)
    as_latex = math_verify.parse(f"${text}$", extraction_config=configs, parsing_timeout=None)
    if _has_expression(as_latex):
        return as_latex
    # Plain text such as "1/2" or "x**2": only when LaTeX found no expression ("1\!000" reads as 1 here).
    as_expression = math_verify.parse(text, extraction_config=configs, parsing_timeout=None)
    return as_expression if _has_expression(as_expression) else as_latex or as_expression


def equivalence_verdict(predicted: str | None, reference: str) -> tuple[bool, bool]:
    """(equal, decided): decided is False when there is no answer or math-verify could not read a side."""
    if predicted is None:
        return False, False
    verdict = fast_verdict(predicted, reference)
    if verdict is not None:
        return verdict, True
    if is_hedged(predicted) and not is_hedged(reference):  # math-verify would grade one of the candidates
        return False, True
    gold, target = parse_answer(reference), parse_answer(predicted)
    if not gold or not target:
        return False, False
    math_verify, _ = _math_verify()
    # verify is not symmetric: the reference goes first (assignments like "x=5" are unwrapped on its side).
    return bool(math_verify.verify(gold, target, timeout_seconds=None)), True


def is_equivalent(predicted: str | None, reference: str) -> bool:
    """Whether the predicted answer equals the reference in value: 1/2 == \\frac{1}{2} == 0.5, [1,3) == [1, 3).

    Safe off the main thread; no time limit (see the module docstring). None predicts nothing: False.
    """
    return equivalence_verdict(predicted, reference)[0]
