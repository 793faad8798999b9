"""From what the judge saw of a run (capture, wait status, CPU time) to an ExecutionResult."""

from __future__ import annotations

import math
import os
import signal

from grading.sandbox import harness
from grading.sandbox.capture import Capture
from grading.sandbox.limits import SandboxLimits
from grading.sandbox.results import MEMORY_LIMIT, OUTPUT_LIMIT, RUNTIME_ERROR, TIME_LIMIT, ExecutionResult


def execution_result(capture: Capture, wait_status: int, cpu_seconds: float, limits: SandboxLimits,
                     nonce: str | None = None, out_of_memory: bool = False,
                     signals_as_exit_codes: bool = False) -> ExecutionResult:
    """nonce: the functional run's success marker (None for stdin runs). signals_as_exit_codes: the
    status comes from an init (bwrap's, or the fork server's pid 1), which reports a program killed by
    signal N as exit status 128 + N."""
    code = os.waitstatus_to_exitcode(wait_status)
    if signals_as_exit_codes and code > 128:
        code = 128 - code
    exit_code, signal_number = (code, None) if code >= 0 else (None, -code)
    stdout = capture.stdout.decode("utf-8", errors="replace")
    check_passed = None
    if nonce is not None:
        marker = "\n" + nonce + "\n"
        check_passed = exit_code == 0 and stdout.endswith(marker)
        stdout = stdout[:-len(marker)] if check_passed else stdout
    verdict = run_verdict(capture, exit_code, signal_number, cpu_seconds, limits, out_of_memory,
                          functional=nonce is not None)
    if nonce is not None and verdict is None:
        verdict = functional_verdict(exit_code, check_passed)
    return ExecutionResult(stdout=stdout, stderr=capture.stderr_tail.decode("utf-8", errors="replace"),
                           exit_code=exit_code, signal=signal_number, cpu_seconds=cpu_seconds,
                           wall_seconds=capture.wall_seconds, verdict=verdict, check_passed=check_passed)


def run_verdict(capture: Capture, exit_code: int | None, signal_number: int | None, cpu_seconds: float,
                limits: SandboxLimits, out_of_memory: bool, functional: bool) -> str | None:
    """None when the run ended by itself with status 0 (functional: or CHECK_FAILED, a wrong answer)."""
    if capture.output_exceeded:
        return OUTPUT_LIMIT
    cpu_limit = math.ceil(limits.time_seconds)
    if capture.timed_out or signal_number == signal.SIGXCPU or (
            signal_number == signal.SIGKILL and cpu_seconds >= cpu_limit):
        return TIME_LIMIT
    if exit_code == harness.MEMORY_ERROR or out_of_memory:
        return MEMORY_LIMIT
    if exit_code == 0 or (functional and exit_code == harness.CHECK_FAILED):
        return None
    return RUNTIME_ERROR


def functional_verdict(exit_code: int | None, check_passed: bool) -> str | None:
    """A functional run that ended 'normally' must have passed or failed the check, nothing else."""
    if check_passed or exit_code == harness.CHECK_FAILED:
        return None
    return RUNTIME_ERROR  # exit status 0 without the marker: the program ended before the check finished
