"""Sandboxed executions per second of a trivial A+B program: bwrap (fresh sandbox and interpreter per run)
versus the pre-forked executor (warm fork server, fresh confined child per run), side by side.

Each execution is one judged test case (run, capture, compare). Runs go through judge_many(), so they
spread over the workers. Needs root, like the sandbox itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

A_PLUS_B = "a, b = map(int, input().split())\nprint(a + b)\n"


def measure(backend: str, runs: int, workers: int) -> tuple[float, float]:
    """(judge start-up seconds, executions per second) of `runs` A+B test cases."""
    from grading.sandbox import ACCEPTED, CodeJudge

    items = [(A_PLUS_B, [{"kind": "stdin", "input": f"{index} {index + 1}\n", "output": f"{2 * index + 1}\n"}])
             for index in range(runs)]
    started = time.perf_counter()
    with CodeJudge(backend=backend, workers=workers) as judge:
        start_up = time.perf_counter() - started
        judge.judge_many(items[:workers * 2])  # warm-up: page cache, first imports
        started = time.perf_counter()
        results = judge.judge_many(items)
        seconds = time.perf_counter() - started
    assert all(result.verdict == ACCEPTED for result in results), "an A+B run was not accepted"
    return start_up, runs / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bwrap-runs", type=int, default=300, help="A+B executions under bwrap")
    parser.add_argument("--forkserver-runs", type=int, default=1000, help="A+B executions in the fork server")
    parser.add_argument("--workers", type=int, default=2, help="parallel sandbox workers (one uid each)")
    arguments = parser.parse_args()
    from grading.sandbox import probe

    print(probe().summary())
    rows = [("bwrap", *measure("bwrap", arguments.bwrap_runs, arguments.workers)),
            ("forkserver", *measure("forkserver", arguments.forkserver_runs, arguments.workers))]
    print(f"\n{arguments.workers} workers, {os.cpu_count()} cores")
    print(f"{'backend':<12}{'start-up s':>11}{'runs/s':>9}{'vs bwrap':>10}")
    for name, start_up, rate in rows:
        print(f"{name:<12}{start_up:>11.2f}{rate:>9.0f}{rate / rows[0][2]:>10.1f}")


if __name__ == "__main__":
    main()
