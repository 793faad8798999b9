"""Written answers reduced to comparable forms: cleaned text, then a scalar, a list, a tuple, an interval
union, a matrix, an equation or a word. Each reducer raises Unparsed when it cannot say, and the caller
leaves the answer to math-verify.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grading.verifier.extraction import math_spans, strip_math_delimiters
from grading.verifier.latex_values import Expression, Unparsed, parse_scalar

SET_OPEN, SET_CLOSE = "\u2983", "\u2984"  # \\{ and \\}: set braces, told apart from grouping braces
_SPACING = re.compile(r"(?<!\\)\\[!,;: ]|\\q?quad(?![a-zA-Z])|~|\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\displaystyle"
                      r"|\\[bB]igg?[lr]?(?![a-zA-Z])")
_THOUSANDS = re.compile(r"(?<![\d.])\d{1,3}(?:(?:,|\{,\}|\\,|\\!| )\d{3})+(?![\d])(?!\.\d)")
_SEPARATOR = re.compile(r",|\{,\}|\\,|\\!| ")
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|\u00b0|\\circ|\\degree|\bdegrees?\b")
# Words after a number that change its value or hedge it: never dropped as a unit.
_NOT_UNITS = re.compile(r"\b(?:squared|cubed|square|cube|million|billion|trillion|thousand|hundred|factorial|"
                        r"percent|or|and|not|no|is|are|wrong|plus|minus|times|over|divided|root|th|st|nd|rd)\b",
                        re.IGNORECASE)
_WRAPPERS = re.compile(r"\\(?:text|textbf|textit|mathrm|mathbf|mbox|operatorname|boldsymbol)\s*\{([^{}]*)\}")
_UNIT_WORDS = re.compile(r"(?<=[\d}.)\s])\s*(?:square\s+|cubic\s+)?(?:[a-zA-Z]{2,}\.?)(?:\s*\^\s*\{?[23]\}?)?"
                         r"(?:\s+(?:per|/)\s+[a-zA-Z]+)?\s*$")
_CONNECTIVES = re.compile(r"\s*(?:\\text\{\s*(?:and|or)\s*\}|\band\b|\bor\b)\s*")
_INEQUALITY = re.compile(r"\\leq?|\\le(?![a-zA-Z])|<=|\u2264")
_SIMPLE_LHS = re.compile(r"^\s*(?:[a-zA-Z](?:_\{?\w+\}?)?|[a-zA-Z]\s*\(\s*[a-zA-Z]\s*\))\s*$")


_HEDGE = re.compile(r"\\lor|\\vee|\\mid|\\text\s*\{[^{}]*\b(?:or|either|maybe|not)\b|\b(?:or|either|maybe|not|"
                    r"actually|perhaps)\b", re.IGNORECASE)


def is_hedged(answer: str) -> bool:
    """Whether an answer offers several candidates or takes itself back: two maths spans ("$5$ $7$"), a
    logical or, a line break outside a matrix, or words such as or, maybe, not."""
    spans = math_spans(answer)
    outside_matrices = re.sub(r"\\begin\{(\w+)\}.*?\\end\{\1\}", "", answer, flags=re.DOTALL)
    return spans > 1 or bool(_HEDGE.search(answer)) or "\\\\" in outside_matrices


def clean(answer: str) -> str:
    """Delimiters, spacing, \\left/\\right, text wrappers of numbers, a final full stop and signs unified."""
    text = strip_math_delimiters(answer)
    text = text.replace("\u2212", "-").replace("\u221e", "\\infty").replace("\\dfrac", "\\frac")
    text = text.replace("\\tfrac", "\\frac").replace("\\%", "%").replace("\\$", "$").replace("\\{", SET_OPEN)
    text = text.replace("\\}", SET_CLOSE).replace("\\lt", "<").replace("\\gt", ">").replace("\\ge", "\\geq")
    text = re.sub(r"\\geqq?", r"\\geq", text)
    text = re.sub(r"(?<![a-zA-Z\\])oo(?![a-zA-Z])", r"\\infty", _DEGREES.sub("", text))
    text = _SPACING.sub(" ", text).strip().rstrip(".").strip()
    text = _THOUSANDS.sub(lambda match: _SEPARATOR.sub("", match.group()), text)
    return re.sub(r"\s+", " ", text).strip()


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
    plus_minus = re.fullmatch(r"(.*?)\\pm\s*(.+)", text)
    if plus_minus and "," not in text:
        left, right = plus_minus.groups()
        return [f"{left}+{right}", f"{left}-{right}"] if left.strip() else [right, f"-({right})"]
    return [item for item in split_top_level(text) if item]


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


__all__ = ["SET_CLOSE", "SET_OPEN", "Unparsed", "Word", "as_word", "clean", "drop_simple_lhs", "equation_sides",
           "inequality_interval",
           "list_items", "matrix_rows", "scalar", "split_top_level", "strip_units", "unwrap_text"]
