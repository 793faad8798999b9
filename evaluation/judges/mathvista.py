"""MathVista answers: a multiple-choice letter or option text, or a free-form value with precision and unit.

Answers are normalised as the math verifier normalises them (evaluation.judges.math.stated_value): \\text{}
unwrapped, a unit stripped, a left side naming the quantity dropped ('m\\angle H = 97^\\circ' -> 97). A letter
counts only when nothing but its option's own text or punctuation follows it: an answer that names two
options ('C or D', 'C. Actually, it is D') is wrong.
"""

from __future__ import annotations

import ast
import re
import string
from fractions import Fraction

from evaluation.datasets import BenchmarkProblem
from grading.judgement import Judgement
from evaluation.judges.math import cleaned_answer, integer_value, stated_value
from grading.verifier import extract_answer, normalise
from grading.verifier.answer_forms import clean, is_hedged

# "C", "(C)", "C.", "(C) 145°": the letter, then what follows it (a word such as "Cat" is no letter).
_OPTION_LETTER = re.compile(r"^\(?([A-Z])\)?(?![A-Za-z0-9])(?P<rest>.*)$", re.DOTALL)
_AFTER_LETTER = " .:;,*-"  # "C.", "C: 145°", "**C**"


def option_letters(choices: list[str]) -> list[str]:
    return list(string.ascii_uppercase[:len(choices)])


def _number(text: str | None) -> Fraction | None:
    """The value of a plain number, degrees or a percentage: '145°' -> 145, '1,000' -> 1000; None otherwise ('1,2')."""
    if text is None:
        return None
    try:
        return Fraction(clean(text).removesuffix("%").strip())
    except (ValueError, ZeroDivisionError):
        return None


def _plain(text: str) -> str:
    return normalise(text).strip().lower().replace(" ", "")


def _names(answer: str, choice: str) -> bool:
    """Whether an answer is the option's text, written alike or with the same value ('6 cm' for '6cm')."""
    if _plain(cleaned_answer(answer)) == _plain(cleaned_answer(choice)):
        return True
    value = _number(stated_value(answer))
    return value is not None and value == _number(stated_value(choice))


def chosen_option(answer: str, choices: list[str]) -> str | None:
    """The option an answer names: its letter alone or with the option's own text ("B", "(B) 140°", "\\text{B}"),
    its text ("6\\text{ cm}"), or its value when one option alone has it ("6"); else None ("C or D")."""
    text = cleaned_answer(answer)
    letter = _OPTION_LETTER.match(text)
    letters = option_letters(choices)
    if letter and letter.group(1) in letters:
        choice = choices[letters.index(letter.group(1))]
        rest = letter.group("rest").lstrip(_AFTER_LETTER).rstrip(" .")
        if not rest or _names(rest, choice):
            return choice
    for choice in choices:
        if _plain(text) == _plain(cleaned_answer(choice)):
            return choice
    matches = [choice for choice in choices if _names(answer, choice)]
    return matches[0] if len(matches) == 1 else None


def without_unit(answer: str, unit: str | None) -> str:
    """'12 years' -> '12' for unit 'years'; the answer unchanged otherwise."""
    text = normalise(answer).strip()
    if unit and text.lower().endswith(unit.lower()):
        text = text[: -len(unit)].strip()
    return text


def free_form_correct(answer: str, problem: BenchmarkProblem) -> bool:
    """Integers as integers, floats rounded to the problem's decimal places, lists element by element."""
    if problem.answer_type == "list":
        try:
            return ast.literal_eval(without_unit(answer, problem.unit)) == ast.literal_eval(problem.answer)
        except (ValueError, SyntaxError):
            return False
    stated = stated_value(answer)
    if stated is None:  # '12 \\text{ thousand}': a word that changes the value
        return False
    text = without_unit(stated, problem.unit)
    if problem.answer_type == "integer":
        value = integer_value(text)
        return value is not None and value == integer_value(problem.answer)
    if problem.answer_type == "float":
        value, reference = _number(text), _number(problem.answer)
        if value is None or reference is None:
            return False
        places = problem.precision if problem.precision is not None else 2
        return round(float(value), places) == round(float(reference), places)
    return _plain(text) == _plain(problem.answer)


def judge_mathvista(problem: BenchmarkProblem, response: str) -> Judgement:
    extracted = extract_answer(response)
    if extracted is None:
        return Judgement(False, "", "no final answer")
    if problem.choices:
        chosen = chosen_option(extracted, problem.choices)
        if chosen is None:
            return Judgement(False, extracted, "names several options" if is_hedged(extracted) else "names no option")
        return Judgement(chosen == problem.answer, extracted)
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
