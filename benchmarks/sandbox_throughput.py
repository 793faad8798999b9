"""Sandboxed executions per second, with exec denied: bwrap (fresh sandbox and interpreter per run) versus
the pre-forked executor (warm fork server, fresh confined child per run), side by side.

Each execution is one judged test case (run, capture, compare): a trivial A+B stdin program, and for the
fork server also a functional test (solution and checker in two processes). Before measuring, each
judge must show that exec is denied (os.execv fails with PermissionError in its sandbox). Runs go
through judge_many(), so they spread over the workers. Needs root, like the sandbox itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

A_PLUS_B = "a, b = map(int, input().split())\nprint(a + b)\n"
ADD = "def add(a, b):\n    return a + b\n"
EXEC_ATTEMPT = "import os\nos.execv('/bin/true', ['true'])\n"


def stdin_items(runs: int) -> list:
    return [(A_PLUS_B, [{"kind": "stdin", "input": f"{index} {index + 1}\n", "output": f"{2 * index + 1}\n"}])
            for index in range(runs)]


def functional_items(runs: int) -> list:
    return [(ADD, [{"kind": "functional", "entry_point": "add",
                    "code": f"def check(candidate):\n    assert candidate({index}, 1) == {index + 1}\n"}])
            for index in range(runs)]


def require_exec_denied(judge) -> None:
    result = judge.run(EXEC_ATTEMPT)
    if result.verdict != "runtime_error" or "PermissionError" not in result.stderr:
        raise SystemExit(f"exec is not denied in this sandbox ({result.verdict}): {result.stderr[-300:]}")


def measure(backend: str, items: list, workers: int) -> tuple[float, float]:
    """(judge start-up seconds, executions per second) of the items, each one test case."""
    from grading.sandbox import ACCEPTED, CodeJudge

    started = time.perf_counter()
    with CodeJudge(backend=backend, workers=workers) as judge:
        start_up = time.perf_counter() - started
        require_exec_denied(judge)
        judge.judge_many(items[:workers * 2])  # warm-up: page cache, first imports
        started = time.perf_counter()
        results = judge.judge_many(items)
        seconds = time.perf_counter() - started
    assert all(result.verdict == ACCEPTED for result in results), "a correct run was not accepted"
    return start_up, len(items) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bwrap-runs", type=int, default=300, help="A+B executions under bwrap")
    parser.add_argument("--forkserver-runs", type=int, default=1000, help="A+B executions in the fork server")
    parser.add_argument("--functional-runs", type=int, default=500, help="functional tests in the fork server")
    parser.add_argument("--workers", type=int, default=2, help="parallel sandbox workers (one uid each)")
    arguments = parser.parse_args()
    from grading.sandbox import probe

    print(probe().summary())
    rows = [("bwrap", "stdin", *measure("bwrap", stdin_items(arguments.bwrap_runs), arguments.workers)),
            ("forkserver", "stdin", *measure("forkserver", stdin_items(arguments.forkserver_runs), arguments.workers)),
            ("forkserver", "functional",
             *measure("forkserver", functional_items(arguments.functional_runs), arguments.workers))]
    print(f"\n{arguments.workers} workers, {os.cpu_count()} cores; exec denied in every run "
          f"(execve/execveat refused by seccomp, checked before measuring)")
    print(f"{'backend':<12}{'test':<12}{'start-up s':>11}{'runs/s':>9}{'vs bwrap':>10}")
    for name, test, start_up, rate in rows:
        print(f"{name:<12}{test:<12}{start_up:>11.2f}{rate:>9.0f}{rate / rows[0][3]:>10.1f}")


if __name__ == "__main__":
    main()
