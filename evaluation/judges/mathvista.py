"""MathVista answers: a multiple-choice letter or option text, or a free-form value with precision and unit."""

from __future__ import annotations

import ast
import re
import string
from fractions import Fraction

from evaluation.datasets import BenchmarkProblem
from grading.judgement import Judgement
from evaluation.judges.math import integer_value
from grading.verifier import extract_answer, normalise

_OPTION_LETTER = re.compile(r"^\(?([A-Z])\)?[.:]?(?:\s|$)")


def option_letters(choices: list[str]) -> list[str]:
    return list(string.ascii_uppercase[:len(choices)])


_DEGREES_OR_PERCENT = re.compile(r"(?:°|\^\{?\\circ\}?|%)$")


def _number(text: str) -> Fraction | None:
    """The value of a plain number, degrees or a percentage: '145°' -> 145; None otherwise."""
    try:
        return Fraction(_DEGREES_OR_PERCENT.sub("", text.strip()).replace(",", ""))
    except (ValueError, ZeroDivisionError):
        return None


def _plain(text: str) -> str:
    return normalise(text).strip().lower().replace(" ", "")


def chosen_option(answer: str, choices: list[str]) -> str | None:
    """The option an answer names: its letter ("B", "(B) 140°") or its text, else None."""
    letter = _OPTION_LETTER.match(answer.strip())
    letters = option_letters(choices)
    if letter and letter.group(1) in letters:
        return choices[letters.index(letter.group(1))]
    for choice in choices:
        if _plain(choice) == _plain(answer):
            return choice
    value = _number(_plain(answer))
    matches = [choice for choice in choices if value is not None and _number(_plain(choice)) == value]
    return matches[0] if len(matches) == 1 else None


def without_unit(answer: str, unit: str | None) -> str:
    """'12 years' -> '12' for unit 'years'; the answer unchanged otherwise."""
    text = normalise(answer).strip()
    if unit and text.lower().endswith(unit.lower()):
        text = text[: -len(unit)].strip()
    return text


def free_form_correct(answer: str, problem: BenchmarkProblem) -> bool:
    """Integers as integers, floats rounded to the problem's decimal places, lists element by element."""
    text = without_unit(answer, problem.unit)
    if problem.answer_type == "integer":
        value = integer_value(text)
        return value is not None and value == integer_value(problem.answer)
    if problem.answer_type == "float":
        value, reference = _number(text), _number(problem.answer)
        if value is None or reference is None:
            return False
        places = problem.precision if problem.precision is not None else 2
        return round(float(value), places) == round(float(reference), places)
    if problem.answer_type == "list":
        try:
            return ast.literal_eval(text) == ast.literal_eval(problem.answer)
        except (ValueError, SyntaxError):
            return False
    return _plain(text) == _plain(problem.answer)


def judge_mathvista(problem: BenchmarkProblem, response: str) -> Judgement:
    extracted = extract_answer(response)
    if extracted is None:
        return Judgement(False, "", "no final answer")
    if problem.choices:
        chosen = chosen_option(extracted, problem.choices)
        return Judgement(chosen is not None and chosen == problem.answer, extracted,
                         "" if chosen is not None else "names no option")
    return Judgement(free_form_correct(extracted, problem), extracted)


def mathvista_question(problem: BenchmarkProblem) -> str:
    """The question with its lettered options, and how to answer."""
    if problem.choices:
        options = "\n".join(f"({letter}) {choice}" for letter, choice in
                            zip(option_letters(problem.choices), problem.choices))
        return f"{problem.prompt}\nChoices:\n{options}\nAnswer with the option's letter."
    unit = f" in {problem.unit}" if problem.unit else ""
    if problem.answer_type == "float" and problem.precision is not None:
        return f"{problem.prompt}\nGive the answer{unit} as a number with {problem.precision} decimal places."
    if problem.answer_type == "integer":
        return f"{problem.prompt}\nGive the answer{unit} as an integer."
    return f"{problem.prompt}\nGive the answer{unit}."
