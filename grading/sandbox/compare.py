"""Stdout comparison as LiveCodeBench grades stdin problems: line by line, then token-wise as numbers."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation


def stripped_lines(text: str) -> list[str]:
    """Lines with surrounding whitespace removed; leading/trailing blank lines ignored."""
    return [line.strip() for line in text.strip().split("\n")]


def as_decimals(tokens: list[str]) -> list[Decimal] | None:
    """The tokens as numbers, None when one is not a number or is a NaN (a NaN equals nothing, and comparing a
    signalling one raises: "sNaN" printed by a program would stop the judge)."""
    try:
        numbers = [Decimal(token) for token in tokens]
    except InvalidOperation:
        return None
    return None if any(number.is_nan() for number in numbers) else numbers


def lines_match(produced: str, expected: str) -> bool:
    """Equal after stripping, or equal as sequences of numbers ("1.0 2" matches "1 2.00").

    The expected line is read first and bounds the work on the program's: a line of millions of numbers
    against one expected number is split into two pieces, never into millions of Decimals in the judge."""
    if produced == expected:
        return True
    wanted = as_decimals(expected.split())
    if wanted is None:
        return False
    tokens = produced.split(maxsplit=len(wanted))  # one piece more than expected holds all the rest
    if len(tokens) != len(wanted):
        return False
    return as_decimals(tokens) == wanted


def first_mismatch(produced: str, expected: str) -> str | None:
    """None when the outputs match; otherwise a short description of the first difference (lines counted
    before any is split off, so a flood of lines costs the judge no list of them)."""
    produced_count, expected_count = line_count(produced), line_count(expected)
    if produced_count != expected_count:
        return f"expected {expected_count} lines, got {produced_count}"
    for number, (got, wanted) in enumerate(zip(stripped_lines(produced), stripped_lines(expected)), start=1):
        if not lines_match(got, wanted):
            return f"line {number}: expected {excerpt(wanted)}, got {excerpt(got)}"
    return None


def line_count(text: str) -> int:
    """The number of lines stripped_lines(text) gives."""
    return text.strip().count("\n") + 1


def excerpt(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
