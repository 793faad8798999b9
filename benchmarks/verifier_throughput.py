"""Math verifier checks per second: in-process, cold worker pool, warm pool, and warm cache, side by side.

The workload mixes MATH-style answer forms (fractions against decimals, sqrt forms, intervals, sets,
tuples, units, wrong answers) with distinct numbers, so every pair is a new (answer, reference) key; one
in eight is an AIME-style integer that the fast path decides without math-verify.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def workload(count: int, offset: int) -> list[tuple[str, str]]:
    """count (response, reference) pairs; a different offset gives different keys."""
    forms = [
        lambda a, b: (f"\\frac{{{a}}}{{{b * 4}}}", f"{a / (b * 4)}"),
        lambda a, b: (f"\\frac{{\\sqrt{{{a}}}}}{{{b}}}", f"\\sqrt{{{a}}}/{b}"),
        lambda a, b: (f"[{a}, {a + b})", f"[{a},{a + b}]"),
        lambda a, b: (f"\\{{{a}, {a + b}\\}}", f"\\{{{a + b},{a}\\}}"),
        lambda a, b: (f"\\left( {a}, \\frac{{\\pi}}{{{b}}} \\right)", f"({a},\\pi/{b})"),
        lambda a, b: (f"{a}\\text{{ cm}}", f"{a}"),
        lambda a, b: (f"\\dfrac{{{a}}}{{{b}}}", f"\\frac{{{a}}}{{{b + 1}}}"),
        lambda a, b: (f"{a:03d}", f"{a}"),
    ]
    pairs = []
    for index in range(count):
        a, b = offset + index + 1, index % 7 + 2
        answer, reference = forms[index % len(forms)](a, b)
        pairs.append((f"Reasoning about the problem...\nSo the result is $\\boxed{{{answer}}}$.", reference))
    return pairs


def timed(function, *arguments) -> tuple[float, object]:
    started = time.perf_counter()
    value = function(*arguments)
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=400, help="checks per measurement")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    arguments = parser.parse_args()
    from grading.verifier import MathVerifier, extract_answer, is_equivalent

    def direct(pairs):
        return [is_equivalent(extract_answer(response), reference) for response, reference in pairs]

    import_seconds, _ = timed(direct, workload(1, offset=10**6))  # imports math_verify and sympy
    direct_seconds, direct_verdicts = timed(direct, workload(arguments.checks, offset=0))

    rows = [("direct, in-process", direct_seconds)]
    with MathVerifier(workers=arguments.workers, timeout_seconds=10) as verifier:
        cold_seconds, cold_results = timed(verifier.check_many, workload(arguments.checks, offset=0))
        rows.append(("pool, cold (incl. start)", cold_seconds))
        warm_pairs = workload(arguments.checks, offset=arguments.checks)
        rows.append(("pool, warm, batch", timed(verifier.check_many, warm_pairs)[0]))
        single_pairs = workload(arguments.checks, offset=2 * arguments.checks)
        rows.append(("pool, warm, one at a time", timed(lambda: [verifier.check(*pair) for pair in single_pairs])[0]))
        rows.append(("cache, warm", timed(verifier.check_many, warm_pairs)[0]))
        stats = verifier.stats()

    assert [result.correct for result in cold_results] == direct_verdicts, "pool and in-process verdicts differ"
    print(f"\n{arguments.checks} checks per row, {arguments.workers} workers, {os.cpu_count()} cores; "
          f"math_verify import and first check in-process: {import_seconds:.2f} s")
    print(f"fast path (no math-verify): {1 - stats.worker_checks / (3 * arguments.checks):.0%} of new pairs; "
          f"correct: {sum(direct_verdicts)}/{arguments.checks}; timeouts: {stats.timeouts}")
    print(f"{'mode':<28}{'seconds':>9}{'checks/s':>11}{'vs direct':>11}")
    for name, seconds in rows:
        print(f"{name:<28}{seconds:>9.2f}{arguments.checks / seconds:>11.0f}{direct_seconds / seconds:>11.2f}")


if __name__ == "__main__":
    main()
