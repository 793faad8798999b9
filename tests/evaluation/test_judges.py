"""Judges on hand-written responses: AIME integers, equivalence, MathVista options and values, code extraction."""

import pytest

from evaluation.datasets import BenchmarkProblem
from evaluation.judges.code import code_task
from grading.programs import IMPORT_HEADER, extract_program
from evaluation.judges.math import integer_value, judge_equivalence, judge_integer
from evaluation.judges.mathvista import chosen_option, judge_mathvista, mathvista_question
from grading.verifier import MathVerifier


def problem(answer="", **fields) -> BenchmarkProblem:
    return BenchmarkProblem(problem_id="p", prompt=fields.pop("prompt", "Q?"), answer=answer, **fields)


@pytest.mark.parametrize("text, value", [
    ("033", 33), ("$1{,}000$", 1000), ("12.0", 12), ("2/4", None), ("x=3", None), (None, None), ("-7", -7),
])
def test_integer_values(text, value):
    assert integer_value(text) == value


def test_aime_answers_are_compared_as_integers():
    responses = ["... \\boxed{033}", "Answer: 33.0", "\\boxed{34}", "the answer is $\\frac{66}{2}$", "nothing"]
    verdicts = judge_integer([(problem("33"), response) for response in responses])
    assert [verdict.correct for verdict in verdicts] == [True, True, False, False, False]
    assert verdicts[0].extracted == "033"
    assert verdicts[3].detail == "not an integer"


def test_math_answers_are_compared_by_value():
    pairs = [(problem("\\frac{1}{2}"), "\\boxed{0.5}"), (problem("\\frac{1}{2}"), "\\boxed{\\dfrac12}"),
             (problem("(1,3]"), "Answer: (1, 3]"), (problem("3\\sqrt{2}"), "\\boxed{\\sqrt{18}}"),
             (problem("5"), "\\boxed{6}")]
    with MathVerifier(workers=1) as verifier:
        verdicts = judge_equivalence(pairs, verifier)
    assert [verdict.correct for verdict in verdicts] == [True, True, True, True, False]


CHOICES = ["135°", "140°", "145°", "150°"]


@pytest.mark.parametrize("answer, chosen", [
    ("C", "145°"), ("(C) 145°", "145°"), ("145°", "145°"), ("145", "145°"), ("E", None), ("about 145", None),
])
def test_a_multiple_choice_answer_names_an_option_by_letter_or_text(answer, chosen):
    assert chosen_option(answer, CHOICES) == chosen


def test_mathvista_free_form_answers_respect_precision_unit_and_type():
    floating = problem("1.2", answer_type="float", precision=1)
    assert judge_mathvista(floating, "Answer: 1.23").correct
    assert not judge_mathvista(floating, "Answer: 1.3").correct
    years = problem("12", answer_type="integer", unit="years")
    assert judge_mathvista(years, "Answer: 12 years").correct
    assert not judge_mathvista(years, "Answer: 13 years").correct
    listed = problem("[2014, 2016]", answer_type="list")
    assert judge_mathvista(listed, "\\boxed{[2014, 2016]}").correct
    choice = problem("145°", choices=CHOICES, answer_type="text")
    assert judge_mathvista(choice, "so the angle is C.\nAnswer: C").correct
    assert not judge_mathvista(choice, "Answer: B").correct
    assert "(C) 145°" in mathvista_question(choice)


def test_the_last_code_block_is_the_program_and_a_completion_continues_the_prompt():
    lcb = problem(prompt="Read two numbers.", test_cases=[{"kind": "stdin", "input": "1 2\n", "output": "3\n"}])
    response = ("First try:\n```python\nprint(1)\n```\nBetter:\n"
                "```python\na, b = map(int, input().split())\nprint(a+b)\n```")
    program = "a, b = map(int, input().split())\nprint(a+b)\n"
    assert extract_program(response, code_task(lcb)) == IMPORT_HEADER + "\n" + program
    add_check = {"kind": "functional", "entry_point": "add",
                 "code": "def check(candidate):\n    assert candidate(1, 2) == 3\n"}
    humaneval = problem(prompt="def add(a, b):\n    \"\"\"Sum.\"\"\"\n", test_cases=[add_check],
                        metadata={"entry_point": "add"})
    assert extract_program("    return a + b\n", code_task(humaneval)) == humaneval.prompt + "    return a + b\n"
    whole = "```python\ndef add(a, b):\n    return a + b\n```"  # runs after the prompt: its imports and helpers
    assert extract_program(whole, code_task(humaneval)) == humaneval.prompt + "\n\ndef add(a, b):\n    return a + b\n"
