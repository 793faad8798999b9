"""Written answers reduced to comparable forms: cleaned text, then a scalar, a list, a tuple, an interval
union, a matrix, an equation, a word or a numeral in a base. Each reducer raises Unparsed when it cannot say,
and the caller leaves the answer to math-verify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from grading.verifier.delimiters import math_spans, strip_math_delimiters
from grading.verifier.latex_values import Expression, Unparsed, parse_scalar

SET_OPEN, SET_CLOSE = "\u2983", "\u2984"  # \\{ and \\}: set braces, told apart from grouping braces
_SPACING = re.compile(r"(?<!\\)\\[!,;: ]|\\q?quad(?![a-zA-Z])|~|\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\displaystyle"
                      r"|\\[bB]igg?[lr]?(?![a-zA-Z])")
# MATH's "10,\\!080": a comma then a negative space, read before the spacing commands are removed.
_MATH_THOUSANDS_SEPARATOR = re.compile(r"(?<=\d),\s*\\!\s*(?=\d{3}(?!\d))")
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:(?:,|\{,\}|\\,|\\!| )\d{3})+(?![\d])(?!\.\d)")
_SEPARATOR = re.compile(r",|\{,\}|\\,|\\!| ")
_REAL_LINE = re.compile(r"\\mathbb\s*\{?\s*R\s*\}?|\u211d")  # an answer that is the real line: (-oo, oo)
# The root sign as typed ("2√5", "√(x+1)", "√{3}"): the number, letter or group after it is its argument.
_UNICODE_ROOT = re.compile(r"\u221a\s*(?:(\d+(?:\.\d+)?|[a-zA-Z])|\(([^()]+)\)|\{([^{}]+)\})")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\u00b0|\\circ|\\degree|\bdegrees?\b")
# Words after a number that change its value or hedge it: never dropped as a unit.
_NOT_UNITS = re.compile(r"\b(?:squared|cubed|square|cube|million|billion|trillion|thousand|hundred|factorial|"
                        r"percent|or|and|not|no|is|are|wrong|plus|minus|times|over|divided|root|th|st|nd|rd)\b",
                        re.IGNORECASE)
# A number and a word that scales it: "70 thousand", "70 \\text{ thousand}", "5 squared" (read as its value).
_SCALES = {"hundred": 2, "thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_POWERS = {"squared": 2, "cubed": 3}
_SCALED = re.compile(r"(?<![\d.])(?P<number>\d+(?:\.\d+)?)\s*(?:(?P<open>\\(?:text|mathrm|mbox)\s*\{)\s*)?"
                     r"(?P<word>hundred|thousand|million|billion|trillion|squared|cubed)\b", re.IGNORECASE)
_EMPTY_WRAPPER = re.compile(r"\\(?:text|mathrm|mbox)\s*\{\s*\}")
_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname|boldsymbol)\s*\{([^{}]*)\}")
_UNIT_WORDS = re.compile(r"(?<=[\d}.)\s])\s*(?:square\s+|cubic\s+)?(?:[a-zA-Z]{2,}\.?)(?:\s*\^\s*\{?[23]\}?)?"
                         r"(?:\s+(?:per|/)\s+[a-zA-Z]+)?\s*$")
_CONNECTIVES = re.compile(r"\s*(?:\\text\{\s*(?:and|or)\s*\}|\band\b|\bor\b)\s*")
_INEQUALITY = re.compile(r"\\leq?|\\le(?![a-zA-Z])|<=|\u2264")
_PLUS_MINUS = re.compile(r"\\pm(?![a-zA-Z])\s*")
_SIMPLE_LHS = re.compile(r"^\s*(?:[a-zA-Z](?:_\{?\w+\}?)?|[a-zA-Z]\s*\(\s*[a-zA-Z]\s*\))\s*$")


# "4210_5", "4210_{5}", "4210_{(5)}": digits, then the base as a subscript.
_BASED_NUMERAL = re.compile(r"(?P<digits>\d[0-9A-Z]*)_(?:(\d+)|\{(\d+)\}|\{\((\d+)\)\})")
# "4 hours 30", "20 m by 30": a number, words, then another number.
_WORDS_BETWEEN_NUMBERS = re.compile(r"\d\s*(?P<words>[a-zA-Z]+(?:\s+[a-zA-Z]+)*)\.?\s+(?=\d)")
_CONNECTIVE_WORD = re.compile(r"and|or", re.IGNORECASE)
# Words of an expression written out ("2 sqrt 3", "3 times 4"): no unit between numbers.
_MATH_WORDS = frozenset({"sqrt", "pi", "times", "x", "cdot", "over", "plus", "minus", "divided", "pm", "mod",
                         "i", "e"})
# "(B) 27": a choice label, then the option; a second label ("(A)(B)") is a hedge, not an option.
_CHOICE_LABEL = re.compile(r"\((?P<letter>[A-E])\)\s*(?P<option>(?!\([A-E]\))\S.*)", re.DOTALL)


_HEDGE = re.compile(r"\\lor|\\vee|\\mid|\\text\s*\{[^{}]*\b(?:or|either|maybe|not)\b|\b(?:or|either|maybe|not|"
                    r"actually|perhaps)\b", re.IGNORECASE)


def is_hedged(answer: str) -> bool:
    """Whether an answer offers several candidates or takes itself back: two maths spans ("$5$ $7$"), a
    logical or, a line break outside a matrix, or words such as or, maybe, not."""
    spans = math_spans(answer)
    outside_matrices = re.sub(r"\\begin\{(\w+)\}.*?\\end\{\1\}", "", answer, flags=re.DOTALL)
    return spans > 1 or bool(_HEDGE.search(answer)) or "\\\\" in outside_matrices


def _thousands_joined(match: re.Match, text: str) -> str:
    """A number with thousands separators as one numeral ("10,080"), except one with commas that stands alone
    between brackets, which is a pair or an interval ("(0,100)", "[1, 250]"), or whose first group is 0."""
    number = match.group()
    opened = text[:match.start()].rstrip(" -").endswith(("(", "["))
    closed = text[match.end():].lstrip().startswith((")", "]"))
    if "," in number and (number.startswith("0") or (opened and closed)):
        return number
    return _SEPARATOR.sub("", number)


def clean(answer: str) -> str:
    """Delimiters, spacing, \\left/\\right, text wrappers of numbers, a final full stop and signs unified."""
    text = strip_math_delimiters(answer)
    text = text.replace("\u2212", "-").replace("\u221e", "\\infty").replace("\\dfrac", "\\frac")
    text = _UNICODE_ROOT.sub(lambda match: f"\\sqrt{{{next(filter(None, match.groups()))}}}", text)
    text = text.replace("\\tfrac", "\\frac").replace("\\%", "%").replace("\\$", "$").replace("\\{", SET_OPEN)
    text = text.replace("\\}", SET_CLOSE).replace("\\lt", "<").replace("\\gt", ">").replace("\\ge", "\\geq")
    text = re.sub(r"\\geqq?", r"\\geq", text)
    text = re.sub(r"(?<![a-zA-Z\\])oo(?![a-zA-Z])", r"\\infty", _DEGREES.sub("", text))
    text = _MATH_THOUSANDS_SEPARATOR.sub("{,}", text)
    text = _SPACING.sub(" ", text).strip().rstrip(".").strip()
    text = _THOUSANDS.sub(lambda match: _thousands_joined(match, text), text)
    text = _EMPTY_WRAPPER.sub("", _SCALED.sub(_scaled_value, re.sub(r"\s+", " ", text).strip()))
    text = re.sub(r"\s+", " ", text).strip()
    return "(-\\infty,\\infty)" if _REAL_LINE.fullmatch(text) else text


def _scaled_value(match: re.Match) -> str:
    """'70 thousand' -> '70000', '1.5 million' -> '1500000', '5 squared' -> '5^{2}'; a \\text{ the word opened
    stays open for what follows it ('70 \\text{thousand dollars}' -> '70000 \\text{ dollars}')."""
    number, word = match.group("number"), match.group("word").lower()
    value = (f"{number}^{{{_POWERS[word]}}}" if word in _POWERS
             else format(Decimal(number).scaleb(_SCALES[word]).normalize(), "f"))
    return f"{value} {match.group('open')}" if match.group("open") else value


def strip_units(text: str) -> str:
    """'5 \\text{ cm}' -> '5', '$18.90 dollars' -> '18.90' (a number must remain)."""
    wrapped_unit = re.search(r"\\(?:text|mbox|mathrm)\s*\{\s*([a-zA-Z][a-zA-Z ]*)\}(?:\s*\^\s*\{?[23]\}?)?\s*$", text)
    if wrapped_unit and re.search(r"\d", text[:wrapped_unit.start()]):
        if _NOT_UNITS.search(re.sub(r"square units?|cubic units?", "", wrapped_unit.group(1))):
            raise Unparsed(f"{wrapped_unit.group(1).strip()!r} is not a unit")
        text = text[:wrapped_unit.start()].strip()
    unit = _UNIT_WORDS.search(text) if re.search(r"\d", text) else None
    if unit is not None and _NOT_UNITS.search(re.sub(r"square units?|cubic units?", "", unit.group()).strip()):
        raise Unparsed(f"{unit.group().strip()!r} is not a unit")
    stripped = text[:unit.start()].strip() if unit is not None else text
    stripped = stripped.replace("$", "").strip()
    return stripped or text


@dataclass(frozen=True)
class Word:
    """A text answer: 'Monday', '(A)'."""

    text: str


def as_word(text: str) -> Word | None:
    """The answer as a word when it is one (letters only, or a choice letter in parentheses)."""
    unwrapped = _WRAPPERS.sub(lambda match: match.group(1), text).strip()
    unwrapped = re.sub(r"^\((\w)\)$", r"\1", unwrapped)
    if re.fullmatch(r"[A-Za-z']+(?: [A-Za-z']+)*", unwrapped) and (len(unwrapped) > 2 or unwrapped != text
                                                                    or unwrapped.isupper()):
        return Word(unwrapped.strip().lower())
    return None


@dataclass(frozen=True)
class Numeral:
    """Digits in a base: '4210_{5}' is Numeral('4210', 5); bare digits ('4210') have no base."""

    digits: str
    base: int | None


def as_numeral(text: str) -> Numeral | None:
    """The answer as a numeral: digits with a base subscript ('4210_5', '4210_{5}', '4210_{(5)}') or bare digits."""
    text = unwrap_text(text).strip()
    based = _BASED_NUMERAL.fullmatch(text)
    if based is not None:
        digits, base = based.group("digits"), int(next(group for group in based.group(2, 3, 4) if group))
        if not 2 <= base <= 36 or any(int(digit, 36) >= base for digit in digits):
            return None
        return Numeral(digits.lstrip("0") or "0", base)
    if re.fullmatch(r"\d[0-9A-Z]*", text):
        return Numeral(text.lstrip("0") or "0", None)
    return None


def is_compound_quantity(text: str) -> bool:
    """Whether numbers are separated by words other than a bare 'and' or 'or' ('4 \\text{ hours } 30
    \\text{ minutes}', '20 m by 30 m', '5 apples and 3 oranges'): a quantity no single number equals."""
    return any(not _CONNECTIVE_WORD.fullmatch(match.group("words"))
               and not all(word.lower() in _MATH_WORDS for word in match.group("words").split())
               for match in _WORDS_BETWEEN_NUMBERS.finditer(unwrap_text(text)))


def split_choice_label(text: str) -> tuple[str, str] | None:
    """('B', '27') for an option written with its choice label ('\\textbf{(B) } 27', '(C) Plane'), else None."""
    match = _CHOICE_LABEL.fullmatch(unwrap_text(text).strip())
    return (match.group("letter"), match.group("option").strip()) if match else None


def split_top_level(text: str, separators: str = ",") -> list[str]:
    """Split at separators outside brackets and braces."""
    parts, depth, current = [], 0, []
    for character in text:
        if character in "([{" + SET_OPEN:
            depth += 1
        elif character in ")]}" + SET_CLOSE:
            depth -= 1
        if depth == 0 and character in separators:
            parts.append("".join(current))
            current = []
        else:
            current.append(character)
    parts.append("".join(current))
    return [part.strip() for part in parts]


def unwrap_text(text: str) -> str:
    """\\text{5} -> 5 and \\mathbf{25} -> 25, so wrapped numbers parse."""
    return _WRAPPERS.sub(lambda match: match.group(1), text)


def equation_sides(text: str) -> tuple[str, str] | None:
    """(left, right) of one '=' outside brackets, else None."""
    parts = split_top_level(text, "=")
    return (parts[0], parts[1]) if len(parts) == 2 else None


def drop_simple_lhs(text: str) -> str:
    """'x = 5' -> '5', 'f(x) = 2x+1' -> '2x+1'; other text unchanged."""
    sides = equation_sides(text)
    if sides is not None and _SIMPLE_LHS.match(sides[0]):
        return sides[1]
    return text


def list_items(text: str) -> list[str]:
    """A bare answer list: '1, 2', 'x=1 \\text{ or } x=2', '\\pm 3' -> items (one item when not a list)."""
    text = _CONNECTIVES.sub(",", text)
    return plus_minus_items([item for item in split_top_level(text) if item])


def plus_minus_items(items: list[str]) -> list[str]:
    """Each item with one \\pm as two: '1\\pm\\sqrt5' -> '1+\\sqrt5', '1-\\sqrt5'; '\\pm 3' -> '3', '-(3)'."""
    expanded = []
    for item in items:
        parts = _PLUS_MINUS.split(item)
        if len(parts) != 2:  # two signs may be correlated (\pm a \mp b): left to math-verify
            expanded.append(item)
            continue
        left, right = parts
        expanded += [f"{left}+{right}", f"{left}-{right}"] if left.strip() else [right, f"-({right})"]
    return expanded


def scalar(text: str) -> tuple[Expression, bool]:
    """(the expression, whether it carried a percent sign)."""
    text = unwrap_text(strip_units(text)).strip()
    percent = text.endswith("%")
    if percent:
        text = text[:-1].strip()
    return parse_scalar(text), percent


def inequality_interval(text: str) -> str | None:
    """'1 \\le x < 3' -> '[1,3)', 'x > 0' -> '(0,\\infty)', else None."""
    text = _INEQUALITY.sub("<=", text).replace("\\geq", ">=")
    two = re.fullmatch(r"(.+?)\s*(<=|<)\s*[a-zA-Z]\s*(<=|<)\s*(.+)", text)
    if two:
        low, low_op, high_op, high = two.groups()
        return f"{'[' if low_op == '<=' else '('}{low},{high}{']' if high_op == '<=' else ')'}"
    one = re.fullmatch(r"[a-zA-Z]\s*(<=|<|>=|>)\s*(.+)", text)
    if one:
        op, bound = one.groups()
        if op.startswith("<"):
            return f"(-\\infty,{bound}{']' if op == '<=' else ')'}"
        return f"{'[' if op == '>=' else '('}{bound},\\infty)"
    return None


def matrix_rows(text: str) -> list[list[str]] | None:
    """Cells of \\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix} (or bmatrix, matrix), else None."""
    match = re.fullmatch(r"\\begin\{([pbvBV]?matrix)\}(.*)\\end\{\1\}", text, re.DOTALL)
    if match is None:
        return None
    rows = [row for row in re.split(r"\\\\", match.group(2)) if row.strip()]
    return [[cell.strip() for cell in row.split("&")] for row in rows]


__all__ = ["SET_CLOSE", "SET_OPEN", "Numeral", "Unparsed", "Word", "as_numeral", "as_word", "clean", "drop_simple_lhs",
           "equation_sides", "inequality_interval", "is_compound_quantity", "list_items", "matrix_rows",
           "plus_minus_items", "scalar", "split_choice_label", "split_top_level", "strip_units", "unwrap_text"]
