"""Stdout comparison as LiveCodeBench grades stdin problems: line by line, then token-wise as numbers."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation


def stripped_lines(text: str) -> list[str]:
    """Lines with surrounding whitespace removed; leading/trailing blank lines ignored."""
    return [line.strip() for line in text.strip().split("\n")]


def as_decimals(line: str) -> list[Decimal] | None:
    """The line's whitespace-separated tokens as numbers, None when one is not a number or is a NaN (a NaN
    equals nothing, and comparing a signalling one raises: "sNaN" printed by a program would stop the judge)."""
    try:
        numbers = [Decimal(token) for token in line.split()]
    except InvalidOperation:
        return None
    return None if any(number.is_nan() for number in numbers) else numbers


def lines_match(produced: str, expected: str) -> bool:
    """Equal after stripping, or equal as sequences of numbers ("1.0 2" matches "1 2.00")."""
    if produced == expected:
        return True
    numbers = as_decimals(produced)
    return numbers is not None and numbers == as_decimals(expected)


def first_mismatch(produced: str, expected: str) -> str | None:
    """None when the outputs match; otherwise a short description of the first difference."""
    produced_lines, expected_lines = stripped_lines(produced), stripped_lines(expected)
    if len(produced_lines) != len(expected_lines):
        return f"expected {len(expected_lines)} lines, got {len(produced_lines)}"
    for number, (got, wanted) in enumerate(zip(produced_lines, expected_lines), start=1):
        if not lines_match(got, wanted):
            return f"line {number}: expected {excerpt(wanted)}, got {excerpt(got)}"
    return None


def excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
