"""Judges on response forms real models write (from the grading audit): AIME integers read as the RL reward's
verifier reads them, MathVista option letters, units and equations."""

import pytest

from evaluation.datasets import BenchmarkProblem
from evaluation.judges.math import integer_value, integer_verdict, judge_integer
from evaluation.judges.mathvista import chosen_option, judge_mathvista
from grading.verifier import extract_answer, is_equivalent


def problem(answer: str, **fields) -> BenchmarkProblem:
    return BenchmarkProblem(problem_id="p", prompt="Q?", answer=answer, **fields)


def aime_verdict(response: str, answer: str):
    return judge_integer([(problem(answer), response)])[0]


# ----------------------------------------------------------------------------- AIME


@pytest.mark.parametrize("text, value", [
    ("1,000", 1000), ("1{,}000", 1000), ("1\\,000", 1000), ("12,345,678", 12345678),
    ("2,5", None), ("2, 5", None), ("1,00", None), ("2 \\, 5", None),
])
def test_aime_removes_only_commas_that_group_thousands(text, value):
    assert integer_value(text) == value


@pytest.mark.parametrize("response", ["$\\boxed{2, 5}$", "$\\boxed{2,5}$", "Answer: 2, 5"])
def test_aime_decides_that_a_list_is_not_the_integer(response):
    verdict = aime_verdict(response, "025")
    assert not verdict.correct and verdict.decided and verdict.detail == "several answers"


@pytest.mark.parametrize("response, answer", [
    ("$\\boxed{204 \\text{ minutes}}$", "204"),
    ("$\\boxed{204\\text{ min}}$", "204"),
    ("The sum of the arcs is $\\boxed{336^\\circ}$.", "336"),
    ("$\\boxed{m+n=25}$", "25"),
    ("$\\boxed{b = 70}$", "70"),
    ("$\\boxed{\\text{25}}$", "25"),
    ("$\\boxed{\\mathbf{25}}$", "25"),
    ("Final Answer: The final answer is $025$. I hope it is correct.", "25"),
    ("The final answer is $025$. I hope it is correct.", "025"),
])
def test_aime_reads_the_integer_as_the_rl_verifier_does(response, answer):
    verdict = aime_verdict(response, answer)
    assert verdict.correct and verdict.decided
    assert is_equivalent(extract_answer(response), answer)  # the RL reward's verdict on the same response


def test_aime_reads_an_answer_left_in_minervas_frame():
    """Whatever the extraction leaves of 'Final Answer: The final answer is $025$. I hope it is correct.'"""
    for extracted in ("The final answer is $025$. I hope it is correct", "$025$. I hope it is correct"):
        assert integer_verdict(extracted, "25").correct
    assert not integer_verdict("The final answer is $026$. I hope it is correct", "25").correct


@pytest.mark.parametrize("response", [
    "$\\boxed{205 \\text{ minutes}}$", "$\\boxed{204\\text{ min}}$", "$\\boxed{336^\\circ}$", "$\\boxed{m+n=26}$",
    "$\\boxed{b = 71}$", "$\\boxed{\\text{26}}$", "$\\boxed{\\mathbf{125}}$", "$\\boxed{1025}$",
    "Final Answer: The final answer is $026$. I hope it is correct.",
])
def test_aime_normalised_answers_must_still_equal_the_reference(response):
    verdict = aime_verdict(response, "025")
    assert not verdict.correct and verdict.decided


@pytest.mark.parametrize("extracted", ["25 \\text{ or } 26", "25 or 26", "25. Actually, it is 26", "25 \\vee 26"])
def test_aime_decides_that_a_hedge_is_wrong(extracted):
    verdict = integer_verdict(extracted, "25")
    assert not verdict.correct and verdict.decided and verdict.detail == "several answers"
    response = f"The answer is {extracted}" if "\\" not in extracted else f"$\\boxed{{{extracted}}}$"
    assert not aime_verdict(response, "25").correct


@pytest.mark.parametrize("response", [
    "$\\boxed{\\frac{50}{2}}$", "$\\boxed{2 \\, 5}$", "$\\boxed{x^2 = 25}$", "$\\boxed{25.5}$",
])
def test_aime_leaves_an_answer_that_is_no_integer_undecided(response):
    verdict = aime_verdict(response, "25")
    assert not verdict.correct and not verdict.decided and verdict.detail == "not an integer"


def test_aime_reads_a_scaled_number_as_its_value():
    verdict = aime_verdict("$\\boxed{25 \\text{ thousand}}$", "25")  # 25000, not 25
    assert not verdict.correct and verdict.decided


# ----------------------------------------------------------------------------- MathVista

DEGREES = problem("145°", choices=["135°", "140°", "145°", "150°"], answer_type="text")  # pid 3
LENGTHS = problem("6cm", choices=["6cm", "7cm", "4cm", "5cm"], answer_type="text")  # pid 6
ANGLES = problem("97", choices=["97", "102", "107", "122"], answer_type="text")  # pid 5
GRAMS = problem("1000", answer_type="integer", unit="g")  # pid 2
CENTIMETRES = problem("1.2", answer_type="float", precision=1)  # pid 1


@pytest.mark.parametrize("response, extracted", [
    ("Answer: C or D", "C or D"), ("$\\boxed{C \\text{ or } D}$", "C \\text{ or } D"),
    ("The answer is C. Actually, on reflection, it is D", "C. Actually, on reflection, it is D"),
])
def test_mathvista_rejects_a_letter_hedged_between_options(response, extracted):
    assert chosen_option(extracted, DEGREES.choices) is None
    judgement = judge_mathvista(DEGREES, response)
    assert not judgement.correct and judgement.detail in ("names several options", "no final answer")


@pytest.mark.parametrize("response, correct", [
    ("Answer: C.", True), ("Answer: C: 145°", True), ("**Answer: (C) 145°**", True),
    ("$\\boxed{(C) 145^\\circ}$", True), ("Answer: (C) 140°", False), ("Answer: C, D", False),
])
def test_mathvista_a_letter_may_be_followed_only_by_its_own_option(response, correct):
    assert judge_mathvista(DEGREES, response).correct == correct
    assert chosen_option("C because the angle is obtuse", DEGREES.choices) is None


@pytest.mark.parametrize("response, correct", [
    ("$\\boxed{\\text{C}}$", True), ("$\\boxed{\\textbf{(C)}}$", True),
    ("$\\boxed{\\text{B}}$", False), ("$\\boxed{\\textbf{(D)}}$", False),
])
def test_mathvista_reads_a_letter_wrapped_in_latex(response, correct):
    assert judge_mathvista(DEGREES, response).correct == correct


@pytest.mark.parametrize("response, correct", [
    ("$\\boxed{6\\text{ cm}}$", True), ("$\\boxed{6 \\, \\text{cm}}$", True),
    ("The length of AC is 6 cm.\nAnswer: 6", True),
    ("$\\boxed{7\\text{ cm}}$", False), ("$\\boxed{4 \\, \\text{cm}}$", False), ("Answer: 5", False),
])
def test_mathvista_matches_an_option_written_with_a_latex_unit_or_without_one(response, correct):
    assert judge_mathvista(LENGTHS, response).correct == correct


def test_mathvista_leaves_a_value_that_several_options_share_unmatched():
    assert chosen_option("6", ["6 cm", "6 mm", "7 cm"]) is None
    assert chosen_option("6\\text{ mm}", ["6 cm", "6 mm", "7 cm"]) == "6 mm"


@pytest.mark.parametrize("response, correct", [
    ("$\\boxed{m\\angle H = 97^\\circ}$", True), ("$\\boxed{m\\angle H = 102^\\circ}$", False),
])
def test_mathvista_reads_the_value_of_an_equation(response, correct):
    assert judge_mathvista(ANGLES, response).correct == correct


@pytest.mark.parametrize("response, correct", [
    ("$\\boxed{1000 \\text{ g}}$", True), ("Answer: 1000 grams", True), ("$\\boxed{1,000}$", True),
    ("$\\boxed{100 \\text{ g}}$", False), ("Answer: 100 grams", False), ("$\\boxed{1000 \\text{ thousand}}$", False),
])
def test_mathvista_strips_a_latex_or_spelled_out_unit_from_an_integer(response, correct):
    assert judge_mathvista(GRAMS, response).correct == correct


@pytest.mark.parametrize("response, correct", [
    ("$\\boxed{1.2 \\text{ cm}}$", True), ("$d \\approx \\boxed{1.2\\,\\text{cm}}$", True),
    ("$\\boxed{12 \\text{ cm}}$", False), ("$\\boxed{1,2}$", False), ("$\\boxed{1.3\\,\\text{cm}}$", False),
])
def test_mathvista_strips_a_latex_unit_from_a_float(response, correct):
    assert judge_mathvista(CENTIMETRES, response).correct == correct


def test_mathvista_no_longer_reads_a_decimal_comma_as_a_thousands_separator():
    assert not judge_mathvista(problem("12", answer_type="integer"), "$\\boxed{1,2}$").correct
    assert not judge_mathvista(problem("12", answer_type="float", precision=1), "$\\boxed{1,2}$").correct
