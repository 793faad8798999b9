"""Verdicts, run and judgment results, and the sandbox's errors."""

from __future__ import annotations

from dataclasses import dataclass

ACCEPTED = "accepted"
WRONG_ANSWER = "wrong_answer"
TIME_LIMIT = "time_limit"
MEMORY_LIMIT = "memory_limit"
RUNTIME_ERROR = "runtime_error"
OUTPUT_LIMIT = "output_limit"
VERDICTS = (ACCEPTED, WRONG_ANSWER, TIME_LIMIT, MEMORY_LIMIT, RUNTIME_ERROR, OUTPUT_LIMIT)


class SandboxUnavailable(RuntimeError):
    """The host lacks protections the configured minimum requires; untrusted code is refused."""


class SandboxError(RuntimeError):
    """The sandbox itself failed (a worker could not start or set a run up), not the program."""


class SandboxClosed(RuntimeError):
    """The judge was closed: no run starts any more, and one in progress was ended."""


@dataclass(frozen=True)
class ExecutionResult:
    """One run of a program in the sandbox.

    verdict is None when the program ran to completion with exit status 0, otherwise time_limit,
    memory_limit, runtime_error or output_limit. check_passed is set for functional runs only: True
    when check(candidate) returned, False when it raised AssertionError.
    """

    stdout: str
    stderr: str  # the last few KB
    exit_code: int | None  # None when killed by a signal
    signal: int | None
    cpu_seconds: float
    wall_seconds: float
    verdict: str | None
    check_passed: bool | None = None

    @property
    def completed(self) -> bool:
        return self.verdict is None


@dataclass(frozen=True)
class JudgeResult:
    """A solution judged against a problem's test cases (in order, stopping at the first failure).

    passed counts the test cases passed before the first failure; detail is short human text: the
    failing test index and why (expected/got excerpt or the stderr tail).
    """

    verdict: str
    passed: int
    total: int
    detail: str = ""
    seconds: float = 0.0

    @property
    def accepted(self) -> bool:
        return self.verdict == ACCEPTED
