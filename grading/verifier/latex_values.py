"""A small parser for the LaTeX arithmetic that most final answers are written in, without sympy.

parse_scalar turns "2\\sqrt{2}", "\\frac{\\pi r^3}{3}", "1.5 \\times 10^{3}" or "3+4i" into an Expression: a
tree that evaluates exactly (a Fraction, when it holds only rationals) or numerically (mpmath at 50 digits,
variables set to chosen values). Anything outside the grammar raises Unparsed, and the caller leaves the
answer to math-verify. Grammar: numbers, + - * / ^, \\cdot, \\times, \\frac, \\sqrt, \\sqrt[n], \\pi, \\infty,
i, e, one-letter variables, implicit products, parentheses and braces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import mpmath

PRECISION_DIGITS = 50
_MAX_POWER_BITS = 100_000  # numeric powers beyond 2^this are left to math-verify
_MAX_EXACT_DIGITS = 2000  # exact powers beyond this many digits are evaluated numerically only
_TOKEN = re.compile(r"\s*(?:(?P<based>\d[0-9A-Z]*_(?:\{\d+\}|\d+))"
                    r"|(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)"
                    r"|(?P<command>\\[a-zA-Z]+)|(?P<letter>[a-zA-Z])|(?P<symbol>[-+*/^(){}\[\]]))")
_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{3,}")  # three letters in a row, not a command
_CONSTANT_COMMANDS = {"\\pi": "pi", "\\infty": "inf"}
_PRODUCT_COMMANDS = {"\\cdot", "\\times"}


class Unparsed(ValueError):
    """The text is outside this parser's grammar."""


Environment = dict[str, mpmath.mpc]


@dataclass(frozen=True)
class Expression:
    """A parsed scalar: exact() is its Fraction or None; value(env) its number with variables from env."""

    exact: Callable[[], Fraction | None]
    value: Callable[[Environment], mpmath.mpc]
    variables: frozenset[str]


def _constant(number: Fraction) -> Expression:
    return Expression(lambda: number, lambda env: mpmath.mpf(number.numerator) / number.denominator, frozenset())


def _number(text: str) -> Expression:
    exponent = re.search(r"[eE]([+-]?\d+)$", text)
    if exponent and abs(int(exponent.group(1))) > _MAX_EXACT_DIGITS:
        raise Unparsed("an exponent too large for the fast path")
    return _constant(Fraction(text))


def _based_number(text: str) -> Expression:
    """'2516_8' or '4210_{5}' inside an expression: digits in the base of the subscript (a whole answer that is
    a numeral compares by its digits instead, see fast_compare._same_numeral)."""
    digits, base = text.split("_")
    base_value = int(base.strip("{}"))
    if not 2 <= base_value <= 36:
        raise Unparsed(f"base {base_value}")
    try:
        return _constant(Fraction(int(digits, base_value)))
    except ValueError:
        raise Unparsed(f"{digits} is not a base-{base_value} numeral") from None


def _symbol(name: str) -> Expression:
    if name == "pi":
        return Expression(lambda: None, lambda env: +mpmath.pi, frozenset())
    if name == "inf":
        return Expression(lambda: None, lambda env: mpmath.inf, frozenset())
    if name == "i":
        return Expression(lambda: None, lambda env: mpmath.mpc(0, 1), frozenset())
    if name == "e":
        return Expression(lambda: None, lambda env: +mpmath.e, frozenset())
    return Expression(lambda: None, lambda env: env[name], frozenset({name}))


def _exact_or_none(function: Callable[[], Fraction | None]) -> Callable[[], Fraction | None]:
    def guarded() -> Fraction | None:
        try:
            return function()
        except (ZeroDivisionError, OverflowError):
            return None
    return guarded


def _binary(left: Expression, right: Expression, exact_op, value_op) -> Expression:
    def exact() -> Fraction | None:
        a, b = left.exact(), right.exact()
        return None if a is None or b is None else exact_op(a, b)
    return Expression(_exact_or_none(exact), lambda env: value_op(left.value(env), right.value(env)),
                      left.variables | right.variables)


def _power_exact(base: Fraction, exponent: Fraction) -> Fraction | None:
    if exponent.denominator != 1 or abs(exponent.numerator) > 10_000:
        return None
    digits = max(len(str(abs(base.numerator))), len(str(base.denominator))) * abs(exponent.numerator)
    if digits > _MAX_EXACT_DIGITS or (base == 0 and exponent < 0):
        return None
    return base ** exponent.numerator


def _bounded_power(base, exponent):
    """base ** exponent, refusing results too large to evaluate quickly (9^{9^{9^9}} goes to math-verify)."""
    if base == 0:
        return mpmath.power(base, exponent)
    magnitude = abs(exponent) * (abs(mpmath.log(abs(base), 2)) + 1)
    if not mpmath.isfinite(magnitude) or magnitude > _MAX_POWER_BITS:
        raise Unparsed("a power too large for the fast path")
    return mpmath.power(base, exponent)


def _sqrt_exact(radicand: Fraction, degree: int) -> Fraction | None:
    """The exact root when radicand is a perfect power of a rational, else None."""
    if radicand < 0 or degree < 1:
        return None
    roots = []
    for part in (radicand.numerator, radicand.denominator):
        root = round(part ** (1 / degree)) if part < 10 ** 300 else None
        if root is None or root ** degree != part:
            return None
        roots.append(root)
    return Fraction(roots[0], roots[1])


def _root(radicand: Expression, degree: int) -> Expression:
    def exact() -> Fraction | None:
        value = radicand.exact()
        return None if value is None else _sqrt_exact(value, degree)
    return Expression(exact, lambda env: mpmath.root(radicand.value(env), degree), radicand.variables)


def _negate(operand: Expression) -> Expression:
    return _binary(_constant(Fraction(-1)), operand, lambda a, b: a * b, lambda a, b: a * b)


class _Parser:
    """Recursive descent over the tokens: sum > product > unary > power > atom."""

    def __init__(self, text: str):
        self.tokens = _tokens(text)
        self.position = 0

    def parse(self) -> Expression:
        expression = self.sum()
        if self.position != len(self.tokens):
            raise Unparsed(f"unexpected {self.tokens[self.position][1]!r}")
        return expression

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def take(self, text: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if token is None or (text is not None and token[1] != text):
            raise Unparsed(f"expected {text or 'more'}")
        self.position += 1
        return token

    def sum(self) -> Expression:
        expression = self.product()
        while (token := self.peek()) is not None and token[1] in "+-":
            self.take()
            right = self.product()
            expression = _binary(expression, right, *((lambda a, b: a + b, lambda a, b: a + b) if token[1] == "+"
                                                      else (lambda a, b: a - b, lambda a, b: a - b)))
        return expression

    def product(self) -> Expression:
        expression = self.unary()
        while (token := self.peek()) is not None:
            if token[1] in _PRODUCT_COMMANDS or token[1] == "*":
                self.take()
                expression = _multiply(expression, self.unary())
            elif token[1] == "/":
                self.take()
                expression = _divide(expression, self.unary())
            elif token[0] in ("number", "based"):  # "3 4" or "2^10" read as 2^1 0: not a product
                raise Unparsed(f"a number right after {self.tokens[self.position - 1][1]!r}")
            elif _starts_atom(token):  # an implicit product: 2x, 3\pi, (x+1)(x-1)
                expression = _multiply(expression, self.power())
            else:
                break
        return expression

    def mixed_number(self, whole: Expression) -> Expression:
        """2\\frac{1}{2} is 5/2: an integer written right before a numeric fraction adds to it."""
        token = self.peek()
        if token is None or token[1] != "\\frac":
            return whole
        start = self.position
        fraction = self.atom()
        if fraction.exact() is None:
            self.position = start
            return whole
        return _binary(whole, fraction, lambda a, b: a + b, lambda a, b: a + b)

    def unary(self) -> Expression:
        token = self.peek()
        if token is not None and token[1] in "+-":
            self.take()
            operand = self.unary()
            return operand if token[1] == "+" else _negate(operand)
        return self.power()

    def power(self) -> Expression:
        base = self.atom()
        if (token := self.peek()) is not None and token[1] == "^":
            self.take()
            exponent = self.group_or_single()
            return _binary(base, exponent, _power_exact, _bounded_power)
        return base

    def group_or_single(self) -> Expression:
        """A braced group, or a single digit, letter or command (as in x^2, \\frac12, \\sqrt2)."""
        token = self.take()
        kind, text = token
        if text == "{":
            inner = self.sum()
            self.take("}")
            return inner
        if kind == "number":
            rest = text[1:]
            if rest:  # \frac12: one digit is the argument, the rest goes back as its own number
                self.tokens[self.position:self.position] = [("number", rest)]
            return _number(text[0])
        self.position -= 1
        return self.atom()

    def atom(self) -> Expression:
        kind, text = self.take()
        if kind == "number":
            return self.mixed_number(_number(text)) if text.isdigit() else _number(text)
        if kind == "based":
            return _based_number(text)
        if kind == "letter":
            return _symbol(text)
        if text in ("(", "{", "["):
            closing = {"(": ")", "{": "}", "[": "]"}[text]
            inner = self.sum()
            self.take(closing)
            return inner
        if text in _CONSTANT_COMMANDS:
            return _symbol(_CONSTANT_COMMANDS[text])
        if text == "\\frac":
            numerator = self.group_or_single()
            return _divide(numerator, self.group_or_single())
        if text == "\\sqrt":
            return self.root()
        raise Unparsed(f"unsupported {text!r}")

    def root(self) -> Expression:
        degree = 2
        if (token := self.peek()) is not None and token[1] == "[":
            self.take()
            degree_text = self.take()[1]
            self.take("]")
            if not degree_text.isdigit():
                raise Unparsed("root degree")
            degree = int(degree_text)
        return _root(self.group_or_single(), degree)


def _multiply(left: Expression, right: Expression) -> Expression:
    return _binary(left, right, lambda a, b: a * b, lambda a, b: a * b)


def _divide(left: Expression, right: Expression) -> Expression:
    return _binary(left, right, lambda a, b: a / b, lambda a, b: a / b)


def _starts_atom(token: tuple[str, str]) -> bool:
    kind, text = token
    return kind in ("number", "letter") or text in ("(", "{") or text in _CONSTANT_COMMANDS \
        or text in ("\\frac", "\\sqrt")


def _tokens(text: str) -> list[tuple[str, str]]:
    tokens, position = [], 0
    text = text.rstrip()
    if _WORD.search(text):
        raise Unparsed("a word (cos, exp, not...) is not a product of variables")
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise Unparsed(f"unexpected character {text[position]!r}")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


def parse_scalar(text: str) -> Expression:
    """The expression written in text; Unparsed when it is outside the grammar or empty."""
    if not text.strip():
        raise Unparsed("empty")
    with mpmath.workdps(PRECISION_DIGITS):
        return _Parser(text).parse()
