"""Adversarial tests of the verifier's fast path (fast_compare.py) and of extraction (extraction.py).

Each test asserts the verdict a careful grader gives under the rules of equivalence_cases.py's docstring.
The fast path runs in the calling process without a time limit, so it must never say True for answers
that differ (a reward hack under RL) and must answer quickly on any input.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grading.verifier import extract_answer, is_equivalent
from grading.verifier.fast_compare import structured_verdict

REPOSITORY = Path(__file__).resolve().parents[2]
TIME_LIMIT_SECONDS = 2.0  # generous hang guard on a shared machine; a call should take well under 0.5 s


def _timed(function, *arguments):
    """(result, seconds) of one call."""
    start = time.perf_counter()
    result = function(*arguments)
    return result, time.perf_counter() - start


# 1. False positives: (predicted, reference) pairs a careful grader calls unequal.
# The fast path may answer False or leave the pair to math-verify (None); it must not say True.
FALSE_POSITIVES = [
    # Variables get correlated values (x, x + 1/7, x + 2/7 at each point), so linear relations between
    # variables hold at every point: an arithmetic progression is not an identity.
    pytest.param("a+c", "2b", id="variables-shifted-by-index-a+c-vs-2b"),
    pytest.param("b-a", "c-b", id="variables-shifted-by-index-b-a-vs-c-b"),
    pytest.param("x-w", "y-x", id="variables-shifted-by-index-x-w-vs-y-x"),
    pytest.param("y-x", "0.142857142857142849212692681248881854116916656494140625",
                 id="variables-shifted-by-float-one-seventh"),
    # A cubic vanishing at the three evaluation points.
    pytest.param("x+(x-0.6180339887)(x-1.4142135623)(x-2.7182818284)", "x", id="polynomial-vanishing-at-points"),
    # Square roots: all points are positive, so |x| looks like x.
    pytest.param("\\sqrt{x^2}", "x", id="sqrt-of-square-is-abs"),
    pytest.param("\\sqrt{(x-3)^2}", "3-x", id="sqrt-of-square-below-all-points"),
    # Juxtaposed numbers are read as a product.
    pytest.param("3 4", "12", id="juxtaposed-numbers-product"),
    pytest.param("100 10", "1000", id="juxtaposed-numbers-product-large"),
    pytest.param("2.5 4", "10", id="juxtaposed-decimals-product"),
    pytest.param("2^10", "0", id="two-digit-exponent-read-as-2-times-0"),
    # Function names without a backslash become products of letters: cos(0) is 1, not 0.
    pytest.param("cos 0", "0", id="cos-as-product-of-letters"),
    pytest.param("cos(0)", "0", id="cos-call-as-product-of-letters"),
    pytest.param("exp(0)", "0", id="exp-as-product-of-letters"),
    pytest.param("\\operatorname{cos}(0)", "0", id="operatorname-cos-unwrapped-to-letters"),
    pytest.param("\\mathrm{cos}(0)", "0", id="mathrm-cos-unwrapped-to-letters"),
    # Percent: each side may be read either way, but not one side as a unit and the other as 1/100.
    pytest.param("0.5\\%", "50\\%", id="percent-both-sides-mixed-readings"),
    pytest.param("50\\%", "0.5\\%", id="percent-both-sides-mixed-readings-reversed"),
    # Unit stripping drops words that change the value or hedge.
    pytest.param("5 squared", "5", id="unit-strip-squared"),
    pytest.param("5 \\text{ squared}", "5", id="unit-strip-text-squared"),
    pytest.param("3 cubed", "3", id="unit-strip-cubed"),
    pytest.param("5 million", "5", id="unit-strip-million"),
    pytest.param("2 \\text{ thousand}", "2", id="unit-strip-text-thousand"),
    pytest.param("10 factorial", "10", id="unit-strip-factorial"),
    pytest.param("5 \\text{ or six}", "5", id="unit-strip-hedge-or-six"),
    pytest.param("5 \\text{ is wrong}", "5", id="unit-strip-is-wrong"),
    pytest.param("5 not", "5", id="unit-strip-not"),
    # Long-decimal rule: two different exact values are unequal however close.
    pytest.param("0.500000", "0.5000001", id="long-decimal-rounds-a-longer-exact-decimal"),
    pytest.param("0.000000", "10^{-9}", id="long-decimal-zero-for-tiny-value"),
    pytest.param("0.000000", "\\frac{1}{3000000}", id="long-decimal-zero-for-tiny-fraction"),
    pytest.param("3.000000", "3+10^{-7}", id="long-decimal-rounds-away-a-terminating-value"),
    # Letters multiplied by zero.
    pytest.param("not 0", "0", id="word-times-zero"),
]


@pytest.mark.parametrize(("predicted", "reference"), FALSE_POSITIVES)
def test_fast_path_never_accepts_a_different_answer(predicted, reference):
    assert structured_verdict(predicted, reference) is not True


# Plausible hacks the fast path already rejects (or leaves to math-verify), kept as guards.
REJECTED_GUARDS = [
    ("50", "0.5\\%"), ("50", "0.5%"), ("5000", "50\\%"), ("5 apples 3", "5"), ("5 apples 3", "53"),
    ("5 and 3", "5"), ("5 \\text{ or } 6", "5"), ("5 or six", "5"), ("5 \\text{ not } 6", "5"),
    ("5 \\quad (wrong)", "5"), ("1, 2, 3", "1"), ("1, 2", "1, 2, 2"), ("x^2", "x^2, x^2"),
    ("x=2", "x^2=4"), ("x^2=4", "x=2"), ("x = 2", "y = 2"), ("(1,2)", "[1,2]"), ("(1,2)", "(1,2]"),
    ("(2,1)", "(1,2)"), ("i", "-i"), ("-\\infty", "\\infty"), ("\\infty - \\infty", "0"),
    ("\\infty i", "\\infty"), ("\\sin x", "x"), ("\\log 8", "8"), ("\\cos 0", "0"), ("\\lfloor 2.5 \\rfloor", "2.5"),
    ("5\\neq", "5"), ("5\\hspace{1cm}6", "5"), ("2^3^2", "64"), ("\\frac12 x", "\\frac{1}{2x}"),
    ("x^2y", "x^{2y}"), ("\\sqrt[3]{-8}", "2"), ("0.333", "\\frac13"), ("0.5000001", "\\frac12"),
    ("100000000000000000000000000000000000000000000000000.000000", "10^{50}+1"),
    ("either 5 or 7", "5"), ("\\text{5 or 7}", "5"), ("5$ or $7", "5"), ("1 = 2", "x = 5"),
]


@pytest.mark.parametrize(("predicted", "reference"), REJECTED_GUARDS)
def test_fast_path_rejects_plausible_hacks(predicted, reference):
    assert structured_verdict(predicted, reference) is not True


@pytest.mark.parametrize(("predicted", "reference"), [
    ("2x=4", "x=2"), ("x = 5", "5 = x"), ("y-2x-1=0", "y=2x+1"), ("\\frac{1}{2}x", "\\frac{x}{2}"),
    ("x^2y", "x^2 y"), ("ab", "ba"), ("i^2", "-1"), ("e^{i\\pi}", "-1"), ("2.718282", "e"),
    ("0.3333333", "\\frac13"), ("5000\\%", "50"), ("\\infty", "\\infty+1"),
])
def test_fast_path_still_accepts_equal_answers(predicted, reference):
    assert structured_verdict(predicted, reference) is True


# 2. Hangs and slowness: every call must come back quickly, whatever the input.
SLOW_INPUTS = [
    # clean() runs before the length limit; "\s*\bdegrees?\b" backtracks quadratically over whitespace.
    pytest.param("1" + " " * 20000 + "1", "11", id="long-whitespace-run-before-length-check"),
    # Fraction("1e9999999") builds a ten-million-digit integer.
    pytest.param("1e9999999", "1", id="huge-scientific-exponent"),
    pytest.param("1e-9999999", "0", id="huge-negative-scientific-exponent"),
    # Guards that are quick today.
    pytest.param("(" * 190 + "1" + ")" * 190, "1", id="deep-parentheses"),
    pytest.param("{" * 199 + "1" + "}" * 199, "1", id="deep-braces"),
    pytest.param("-" * 398 + "1", "1", id="many-unary-minus"),
    pytest.param("\\sqrt" * 79 + "{2}", "1", id="nested-square-roots"),
    pytest.param("\\frac1" * 60 + "2", "1", id="nested-fractions"),
    pytest.param(", ".join(["x^{7}+y^{5}z"] * 5), ", ".join(["x^{7}+y^{5}w"] * 5), id="five-item-permutations"),
    pytest.param(", ".join(["x=1", "y=2", "z=3", "w=4", "v=5"]), ", ".join(["a=5", "b=4", "c=3", "d=2", "e=1"]),
                 id="five-equations-permutations"),
    pytest.param(", ".join(["50\\%"] * 5), ", ".join(["0.5"] * 4 + ["0.6"]), id="five-percent-items"),
    pytest.param(", ".join(["x^{9}y^{9}"] * 40), ", ".join(["x^{9}y^{8}"] * 40), id="forty-items-greedy"),
    pytest.param("2^{49999}", "2^{49998}", id="large-power"),
    pytest.param("(\\frac{9999}{9997})^{9999}", "1", id="large-exact-power"),
    pytest.param("10^{999}" * 44, "1", id="product-of-large-powers"),
    pytest.param("\\sqrt[999999999999]{2}", "1", id="huge-root-degree"),
    pytest.param("1.0000001^{1.0000001^{1.0000001^{1.0000001^{99999}}}}", "1", id="power-tower"),
    pytest.param("9^{9^{9^9}}", "1", id="hung-power-tower"),
    pytest.param("5" + " ab" * 130, "5", id="many-unit-words"),
    pytest.param("1<" * 130 + "x", "1", id="long-inequality-chain"),
    pytest.param("9" * 399, "9" * 398 + "8", id="huge-integers"),
    pytest.param("0." + "3" * 397, "\\frac13", id="longest-decimal"),
]


@pytest.mark.parametrize(("predicted", "reference"), SLOW_INPUTS)
def test_fast_path_answers_quickly(predicted, reference):
    _, seconds = _timed(structured_verdict, predicted, reference)
    assert seconds < TIME_LIMIT_SECONDS


def test_long_decimal_rule_does_not_expand_a_huge_value_into_an_integer():
    """_long_decimal_matches turns the reference into an int: 10^(9.6e10) is a 40 GB integer.

    Run in a child with a 1.5 GB address-space limit, so a failure is a MemoryError there, not here.
    """
    reference = "(10^{-999})^{-99}"
    for _ in range(3):
        reference = "(\\frac{1}{%s})^{-99}" % reference
    code = textwrap.dedent(f"""
        import resource, time
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))
        from grading.verifier.fast_compare import structured_verdict
        start = time.perf_counter()
        verdict = structured_verdict("1.000000", {reference!r})
        print(verdict, time.perf_counter() - start)
    """)
    child = subprocess.run([sys.executable, "-c", code], cwd=REPOSITORY, capture_output=True, text=True,
                           timeout=60)
    assert child.returncode == 0, child.stderr[-2000:]
    verdict, seconds = child.stdout.split()
    assert verdict != "True"
    assert float(seconds) < TIME_LIMIT_SECONDS


def test_extraction_of_many_unclosed_boxes_is_quick():
    """Each unclosed \\boxed{ is scanned to the end of the response: quadratic in the response length."""
    response = "\\boxed{" * 6000  # 42,000 characters, under MAX_RESPONSE_CHARACTERS
    _, seconds = _timed(extract_answer, response)
    assert seconds < TIME_LIMIT_SECONDS


def test_extraction_of_a_long_answer_line_is_quick():
    response = "The answer is " + "answer " * 20000 + "5"
    _, seconds = _timed(extract_answer, response)
    assert seconds < TIME_LIMIT_SECONDS


# 3. Extraction hacks: the response's answer is wrong, or hedges, yet grades correct.
def test_a_box_inside_text_does_not_override_the_stated_answer():
    response = "$\\text{\\boxed{7}}$ is wrong. Answer: 5"
    assert not is_equivalent(extract_answer(response), "7")


def test_a_box_printed_by_code_does_not_override_the_stated_answer():
    response = "```python\nprint('\\\\boxed{7}')\n```\nThe answer is 5"
    assert not is_equivalent(extract_answer(response), "7")


@pytest.mark.parametrize(("response", "reference"), [
    pytest.param("Answer: \\(5\\) \\(7\\)", "5", id="two-inline-maths-first"),
    pytest.param("Answer: $5$ \\(7\\)", "7", id="two-inline-maths-last"),
    pytest.param("Answer: $5$; \\(7\\)", "7", id="two-inline-maths-semicolon"),
    pytest.param("Answer: \\(5\\), \\(7\\)", "5", id="two-inline-maths-comma"),
    pytest.param("Answer: $5 \\lor 7$", "7", id="logical-or"),
    pytest.param("Answer: $5 \\mid 7$", "7", id="bar-separated"),
    pytest.param("Answer: $5 \\\\ 7$", "7", id="line-break-separated"),
    pytest.param("So we get\n\\(5\\) or \\(7\\)", "5", id="last-line-two-maths"),
    pytest.param("Final answer: \\(5\\) \\text{or} \\(7\\)", "5", id="text-or-between-maths"),
    pytest.param("Answer: 5 \\text{ or six}", "5", id="hedge-in-unit-word"),
])
def test_an_answer_line_with_two_candidates_is_not_graded_correct(response, reference):
    assert not is_equivalent(extract_answer(response), reference)


@pytest.mark.parametrize("reference", ["1", "2"])
def test_two_boxed_candidates_joined_by_or_are_a_list_equal_to_neither(reference):
    assert not is_equivalent(extract_answer("\\boxed{1} or \\boxed{2}"), reference)


@pytest.mark.parametrize("response", [
    "Final answer: \\boxed{5} \\fbox{7}", "\\boxed{\\boxed{5}} \\boxed{7}",
    "\\boxed{5 \\text{ or } \\boxed{7}}", "\\boxed{5}\n\\mbox{\\boxed{7}}", "\\boxed{5} \\boxed {7}",
])
def test_disagreeing_boxes_extract_nothing(response):
    assert extract_answer(response) is None


@pytest.mark.parametrize(("response", "reference"), [
    ("Answer: 5 or 7", "5"), ("Answer: 5 or 7", "7"), ("The answer is either 5 or 7", "5"),
    ("The answer is $5$ (or $7$)", "5"), ("The answer is $5$ (or $7$)", "7"), ("Answer: $5$ or $7$", "7"),
    ("Answer: $5$, or maybe $7$", "5"), ("Answer: $5$. Actually no, $7$.", "7"), ("Answer: $5$ $7$", "5"),
    ("\\boxed{5\\text{ or }7}", "5"), ("\\boxed{\\text{5 or 7}}", "7"), ("The answer is not 5", "5"),
    ("\\boxed{5}\n\\boxed{7}", "7"),
])
def test_hedged_responses_are_not_graded_correct(response, reference):
    assert not is_equivalent(extract_answer(response), reference)
