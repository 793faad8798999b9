"""Running a benchmark's functional test case in process, as the sandbox separates it (for dataset tests)."""

from __future__ import annotations


def run_functional(solution: str, test_case: dict[str, str]) -> None:
    """The solution and the check code each in a namespace of its own, then check(<the solution's entry point>);
    raises AssertionError when the check fails."""
    solution_globals: dict = {}
    exec(compile(f"from typing import *\n{solution}", "<solution>", "exec"), solution_globals)
    check_globals: dict = {}
    exec(compile(test_case["code"], "<test case>", "exec"), check_globals)
    check_globals["check"](eval(test_case["entry_point"], solution_globals))
