"""The verifier's fast path: compare two written answers by value without sympy, or say it cannot.

structured_verdict returns True or False when the answers fall in the forms of answer_forms.py (numbers,
fractions, radicals, pi, complex numbers, expressions in one-letter variables, lists, sets, tuples,
intervals and unions, matrices, equations, words), and None otherwise, for math-verify to decide.
Two decisions are made here because math-verify gets them wrong: a numeral in a base other than ten
('4210_{5}') equals only its digits ('4210', '4210_5'), never its decimal value ('555'); and numbers separated
by words ('4 \\text{ hours } 30 \\text{ minutes}') equal no single number (math-verify reads the first).

Values: rationals compare exactly; anything else is evaluated to 50 digits and equal when it agrees to 40
digits. Expressions with variables are evaluated at four points, the same for both sides, where every
variable takes its own value built from square roots of primes (one above 5, one below -5, two between
-4 and 4: no short decimal and no linear relation between variables holds there).
A decimal with six or more significant digits also
matches an exact value without a terminating expansion that it rounds or truncates to ("0.3333333" for
1/3); other decimals must be exact ("0.333" is not 1/3, "0.5000001" is not 1/2). A percent sign may be
read as a unit or as 1/100, the same reading on both sides when both carry one.
"""

from __future__ import annotations

import re
from fractions import Fraction
from itertools import permutations

import mpmath

from grading.verifier.answer_forms import (
    SET_CLOSE, SET_OPEN, Unparsed, as_numeral, as_word, clean, drop_simple_lhs, equation_sides, inequality_interval,
    is_compound_quantity, list_items, matrix_rows, plus_minus_items, scalar, split_choice_label, split_top_level,
)
from grading.verifier.latex_values import PRECISION_DIGITS, Expression

_MAX_FAST_LENGTH = 400  # longer answers go to math-verify, in a worker with a time limit
_MAX_ITEMS_TO_PAIR = 5  # unordered lists longer than this are paired greedily
_TOLERANCE = mpmath.mpf(10) ** -40
_POINT_COUNT = 4
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97)
_MAX_LONG_DECIMAL_MAGNITUDE = 10 ** 60
_LONG_DECIMAL = re.compile(r"-?\d*\.(\d{6,})")
_INTERVAL = re.compile(r"^[\[(].*[\])]$", re.DOTALL)


def structured_verdict(predicted: str, reference: str) -> bool | None:
    """True or False when the fast path decides; None leaves the pair to math-verify."""
    if len(predicted) > 4 * _MAX_FAST_LENGTH or len(reference) > 4 * _MAX_FAST_LENGTH:
        return None
    left, right = clean(predicted), clean(reference)
    if not left or not right:
        return False
    if left == right:
        return True
    if len(left) > _MAX_FAST_LENGTH or len(right) > _MAX_FAST_LENGTH:
        return None
    try:
        with mpmath.workdps(PRECISION_DIGITS):
            return _compare(left, right)
    except (Unparsed, ArithmeticError, ValueError, KeyError, RecursionError):
        return None


def value_key(answer: str) -> str | None:
    """The exact value of an answer that is one constant rational number, as text ('0.5', '1/2' and
    '\\frac{1}{2}' all give '1/2'), so answers of one value group without comparing every pair; None for
    anything else (radicals, variables, percents, lists, words, equations, numerals in other bases)."""
    text = clean(answer)
    if not text or len(text) > _MAX_FAST_LENGTH:
        return None
    try:
        if is_compound_quantity(text) or as_word(text) is not None or matrix_rows(text) is not None \
                or equation_sides(text) is not None or _shape(text)[0] != "scalar":
            return None
        numeral = as_numeral(text)
        if numeral is not None and numeral.base not in (None, 10):
            return None
        with mpmath.workdps(PRECISION_DIGITS):
            expression, percent = scalar(text)
            exact = None if percent or expression.variables else expression.exact()
    except (Unparsed, ArithmeticError, ValueError, KeyError, RecursionError):
        return None
    return None if exact is None else str(exact)


def _compare(left: str, right: str) -> bool:
    if is_compound_quantity(left) != is_compound_quantity(right):
        return False  # "4 hours 30 minutes" is not 4, though math-verify reads its first number
    left, right = _option_answered(left, right), _option_answered(right, left)
    words = as_word(left), as_word(right)
    if words[0] is not None and words[1] is not None:
        return words[0] == words[1]
    if any(word is not None for word in words):
        raise Unparsed("a word against a value")
    matrices = matrix_rows(left), matrix_rows(right)
    if matrices[0] is not None or matrices[1] is not None:
        return _same_matrix(*matrices)
    left, right = _strip_membership(left), _strip_membership(right)
    intervals = _intervals(left), _intervals(right)
    if intervals[0] is not None and intervals[1] is not None and (_is_interval_form(left) or _is_interval_form(right)):
        return _same_items(intervals[0], intervals[1], _same_interval, ordered=False)
    (left_kind, left_items), (right_kind, right_items) = _shape(left), _shape(right)
    if len(left_items) != len(right_items):
        return False
    if left_kind != right_kind:
        raise Unparsed("a tuple against an unordered list")  # "(1, 2)" may be an open interval: math-verify
    return _same_items(left_items, right_items, _same_scalar, ordered=left_kind == "tuple")


def _option_answered(text: str, other: str) -> str:
    """The part of a labelled option ('\\textbf{(B) } 27') that other is written as: its letter when other
    is a choice letter, its value otherwise; text unchanged when it has no label or both sides have one."""
    labelled = split_choice_label(text)
    if labelled is None or split_choice_label(other) is not None:
        return text
    letter, option = labelled
    other_word = as_word(other)
    return letter if other_word is not None and len(other_word.text) == 1 else option


def _strip_membership(text: str) -> str:
    return re.sub(r"^[a-zA-Z]\s*\\in\s*", "", text)


def _shape(text: str) -> tuple[str, list[str]]:
    """('tuple' | 'unordered' | 'scalar', items)."""
    if text.startswith(SET_OPEN) and text.endswith(SET_CLOSE):
        return "unordered", plus_minus_items([item for item in split_top_level(text[1:-1]) if item])
    if text.startswith("(") and text.endswith(")") and len(split_top_level(text[1:-1])) > 1 \
            and _balanced(text[1:-1]):
        return "tuple", split_top_level(text[1:-1])
    items = list_items(text)
    if len(items) > 1:
        return "unordered", [drop_simple_lhs(item) for item in items]
    return "scalar", [text]


def _balanced(text: str) -> bool:
    depth = 0
    for character in text:
        depth += character in "([{"
        depth -= character in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _is_interval_form(text: str) -> bool:
    return "\\cup" in text or inequality_interval(text) is not None or (
        _INTERVAL.match(text) is not None and (text[0] == "[" or text[-1] == "]" or "\\infty" in text))


def _intervals(text: str) -> list[tuple[str, str, str, str]] | None:
    """[(opening, low, high, closing)] of an interval or a union of intervals, else None."""
    converted = inequality_interval(text)
    text = converted or text
    result = []
    for part in text.split("\\cup"):
        part = part.strip()
        if not _INTERVAL.match(part) or not _balanced(part[1:-1]):
            return None
        bounds = split_top_level(part[1:-1])
        if len(bounds) != 2:
            return None
        result.append((part[0], bounds[0], bounds[1], part[-1]))
    return result


def _same_interval(left: tuple[str, str, str, str], right: tuple[str, str, str, str]) -> bool:
    return left[0] == right[0] and left[3] == right[3] and _same_scalar(left[1], right[1]) \
        and _same_scalar(left[2], right[2])


def _same_matrix(left: list[list[str]] | None, right: list[list[str]] | None) -> bool:
    if left is None or right is None:
        raise Unparsed("a matrix against another form")
    if [len(row) for row in left] != [len(row) for row in right]:
        return False
    return all(_same_scalar(a, b) for row_a, row_b in zip(left, right) for a, b in zip(row_a, row_b))


def _same_items(left: list, right: list, same, ordered: bool) -> bool:
    if len(left) != len(right):
        return False
    if ordered:
        return all(same(a, b) for a, b in zip(left, right))
    if len(left) <= _MAX_ITEMS_TO_PAIR:
        return any(all(same(a, b) for a, b in zip(left, order)) for order in permutations(right))
    remaining = list(right)
    for item in left:
        match = next((index for index, other in enumerate(remaining) if same(item, other)), None)
        if match is None:
            return False
        remaining.pop(match)
    return True


def _same_scalar(left: str, right: str) -> bool:
    left_sides, right_sides = equation_sides(left), equation_sides(right)
    if left_sides is not None and right_sides is not None:
        return _same_equation(left_sides, right_sides)
    left, right = drop_simple_lhs(left), drop_simple_lhs(right)
    if equation_sides(left) is not None or equation_sides(right) is not None:
        raise Unparsed("an equation against a value")
    same_digits = _same_numeral(left, right)
    if same_digits is not None:
        return same_digits
    (left_value, left_percent), (right_value, right_percent) = scalar(left), scalar(right)
    if left_percent and right_percent:  # 0.5% is not 50%: the sign means the same on both sides
        return _same_value(left_value, left, right_value, right)
    return any(_same_value(a, left, b, right) for a in _readings(left_value, left_percent)
               for b in _readings(right_value, right_percent))


def _same_numeral(left: str, right: str) -> bool | None:
    """Numerals in a base other than ten compare by digits and base; None when neither side has such a base.

    '4210_{5}' equals '4210_5', '4210_{(5)}' and the bare digits '4210' (the subscript is often dropped), but
    not its decimal value '555': that is the number the question asked to convert.
    """
    numerals = as_numeral(left), as_numeral(right)
    bases = {numeral.base for numeral in numerals if numeral is not None} - {None, 10}
    if not bases:
        return None
    if len(bases) > 1 or None in numerals:
        return False
    (base,) = bases
    return numerals[0].digits == numerals[1].digits and all(numeral.base in (None, base) for numeral in numerals)


def _readings(expression: Expression, percent: bool) -> list[Expression]:
    """The value, and with a percent sign also the value divided by 100."""
    if not percent:
        return [expression]
    hundredth = Expression(lambda: None if expression.exact() is None else expression.exact() / 100,
                           lambda env: expression.value(env) / 100, expression.variables)
    return [expression, hundredth]


def _environment(variables: list[str], point: int) -> dict[str, mpmath.mpf]:
    """Each variable's value at a point, from f = frac(sqrt(prime)) with a prime per (point, variable):
    5 + 3f at point 0, -(5 + 3f) at point 1 (beyond the small numbers answers are built from), 8f - 4 after."""
    values = {}
    for index, name in enumerate(variables):
        root = mpmath.sqrt(_PRIMES[(point * 7 + index * 3) % len(_PRIMES)] + 100 * (index + point * 7))
        fraction = root - mpmath.floor(root)
        values[name] = (5 + 3 * fraction, -5 - 3 * fraction)[point] if point < 2 else 8 * fraction - 4
    return values


def _same_value(left: Expression, left_text: str, right: Expression, right_text: str) -> bool:
    exact_left, exact_right = left.exact(), right.exact()
    if exact_left is not None and exact_right is not None and exact_left == exact_right:
        return True
    if _long_decimal_matches(left_text, right) or _long_decimal_matches(right_text, left):
        return True
    if exact_left is not None and exact_right is not None:
        return False
    variables = sorted(left.variables | right.variables)
    for point in range(_POINT_COUNT if variables else 1):
        environment = _environment(variables, point)
        a, b = left.value(environment), right.value(environment)
        if not _close(a, b):
            return False
    return True


def _close(a, b) -> bool:
    if mpmath.isnan(a) or mpmath.isnan(b):
        raise Unparsed("not a number")
    if mpmath.isinf(a) or mpmath.isinf(b):
        return a == b
    return abs(a - b) <= _TOLERANCE * max(1, abs(a), abs(b))


def _long_decimal_matches(text: str, reference: Expression) -> bool:
    """A decimal of six or more significant digits equals an exact value without a terminating expansion
    that, rounded or truncated to as many places, is that decimal ("0.3333333" for 1/3, never for 1/2)."""
    match = _LONG_DECIMAL.fullmatch(text.strip())
    if match is None or reference.variables or len(re.sub(r"\D", "", text).lstrip("0")) < 6:
        return False
    exact = reference.exact()
    if exact is not None and _terminates(exact):
        return False
    value = reference.value({})
    if mpmath.im(value) != 0 or not mpmath.isfinite(value) or abs(value) > _MAX_LONG_DECIMAL_MAGNITUDE:
        return False
    places = len(match.group(1))
    written = Fraction(text.strip()) * 10 ** places
    scaled = mpmath.re(value) * 10 ** places
    truncated = mpmath.floor(scaled) if scaled >= 0 else mpmath.ceil(scaled)
    return written in (int(mpmath.nint(scaled)), int(truncated))


def _terminates(value: Fraction) -> bool:
    """Whether the decimal expansion of value ends (its denominator has no prime factor but 2 and 5)."""
    denominator = value.denominator
    for factor in (2, 5):
        while denominator % factor == 0:
            denominator //= factor
    return denominator == 1


def _same_equation(left: tuple[str, str], right: tuple[str, str]) -> bool:
    """Equations are the same when left - right of one is a constant non-zero multiple of the other's."""
    differences = []
    for sides in (left, right):
        (lhs, _), (rhs, _) = scalar(sides[0]), scalar(sides[1])
        differences.append((lhs, rhs))
    variables = sorted(set().union(*(side.variables for pair in differences for side in pair)))
    ratios = []
    for point in range(_POINT_COUNT):
        environment = _environment(variables, point)
        first = differences[0][0].value(environment) - differences[0][1].value(environment)
        second = differences[1][0].value(environment) - differences[1][1].value(environment)
        if _close(first, 0) or _close(second, 0):
            if not (_close(first, 0) and _close(second, 0)):
                return False
            continue
        ratios.append(first / second)
    return all(_close(ratio, ratios[0]) for ratio in ratios)
