"""Programs cut out of responses and judged on their tests in the sandbox."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from grading.judgement import Judgement

_FENCED_BLOCK = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class CodeTask:
    """What judging a program needs: the problem's prompt, its tests, and the function a completion defines."""

    prompt: str
    test_cases: Sequence
    entry_point: str | None = None


def extract_program(response: str, task: CodeTask) -> str:
    """The last fenced code block of the response, else the response itself.

    A HumanEval-style completion (no block, or a block that does not define the entry point) continues
    the task's prompt, so the prompt is put in front of it.
    """
    blocks = _FENCED_BLOCK.findall(response)
    program = blocks[-1] if blocks else response
    if task.entry_point and f"def {task.entry_point}" not in program:
        return task.prompt + program
    return program


def judge_programs(pairs: Sequence[tuple[CodeTask, str]], code_judge) -> list[Judgement]:
    """Accepted (every test passes) is correct; the detail is the sandbox verdict and tests passed."""
    programs = [extract_program(response, task) for task, response in pairs]
    results = code_judge.judge_many([(program, task.test_cases) for program, (task, _) in zip(programs, pairs)])
    return [Judgement(result.verdict == "accepted", program, f"{result.verdict} ({result.passed}/{result.total} tests)")
            for program, result in zip(programs, results)]
