"""From what the judge saw of a run (capture, wait status, CPU time) to an ExecutionResult."""

from __future__ import annotations

import math
import os
import signal

from grading.sandbox import running
from grading.sandbox.capture import Capture
from grading.sandbox.limits import SandboxLimits
from grading.sandbox.results import MEMORY_LIMIT, OUTPUT_LIMIT, RUNTIME_ERROR, TIME_LIMIT, ExecutionResult


def execution_result(capture: Capture, wait_status: int, cpu_seconds: float, limits: SandboxLimits,
                     functional: bool = False, out_of_memory: bool = False,
                     signals_as_exit_codes: bool = False) -> ExecutionResult:
    """functional: a functional test's run, whose exit status is its checker's (0: the check passed,
    CHECK_FAILED: it failed). signals_as_exit_codes: the status comes from an init (bwrap's, or the fork
    server's pid 1), which reports a program killed by signal N as exit status 128 + N."""
    code = os.waitstatus_to_exitcode(wait_status)
    if signals_as_exit_codes and code > 128:
        code = 128 - code
    exit_code, signal_number = (code, None) if code >= 0 else (None, -code)
    verdict = run_verdict(capture, exit_code, signal_number, cpu_seconds, limits, out_of_memory, functional)
    check_passed = (verdict is None and exit_code == 0) if functional else None
    return ExecutionResult(stdout=capture.stdout.decode("utf-8", errors="replace"),
                           stderr=capture.stderr_tail.decode("utf-8", errors="replace"),
                           exit_code=exit_code, signal=signal_number, cpu_seconds=cpu_seconds,
                           wall_seconds=capture.wall_seconds, verdict=verdict, check_passed=check_passed)


def run_verdict(capture: Capture, exit_code: int | None, signal_number: int | None, cpu_seconds: float,
                limits: SandboxLimits, out_of_memory: bool, functional: bool) -> str | None:
    """None when the run ended by itself with status 0 (functional: or CHECK_FAILED, a wrong answer)."""
    if capture.output_exceeded:
        return OUTPUT_LIMIT
    cpu_limit = math.ceil(limits.time_seconds)  # RLIMIT_CPU's whole seconds, per process
    # cpu_seconds sums the run's processes: work split over forked children is held to the limit as a whole
    if capture.timed_out or signal_number == signal.SIGXCPU or cpu_seconds > cpu_limit or (
            signal_number == signal.SIGKILL and cpu_seconds >= cpu_limit):
        return TIME_LIMIT
    if exit_code == running.MEMORY_ERROR or out_of_memory:
        return MEMORY_LIMIT
    if exit_code == 0 or (functional and exit_code == running.CHECK_FAILED):
        return None
    return RUNTIME_ERROR
