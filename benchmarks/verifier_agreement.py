"""Agreement of stock math-verify and our verifier with the graders' verdicts in tests/grading/equivalence_cases.py.

Stock math-verify parses each bare string with LaTeX and plain-expression extraction and verifies
(reference first); it is tried on the strings as written and wrapped in $...$, and the better of the two
overall is reported as "math-verify". Ours is grading.verifier.is_equivalent. Every check runs in a worker
process that is killed and replaced when a check passes the time limit; such a check counts as a disagreement.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# The graders compared, in the order printed; "math-verify" below is the better of the two stock variants.
STOCK_BARE = "math-verify, as written"
STOCK_DOLLARS = "math-verify, in $...$"
OURS = "ours"
GRADERS = (STOCK_BARE, STOCK_DOLLARS, OURS)


def _quiet_math_verify() -> None:
    """Drops math_verify's per-call 'Timeout is disabled' warnings in the worker (the pool enforces the limit)."""
    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).setLevel(logging.ERROR)


def stock_verdict(reference: str, predicted: str, in_dollars: bool) -> bool:
    """Stock math-verify: parse both strings, verify(gold, prediction); no time limits (off the main thread safe)."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    if in_dollars:
        reference, predicted = f"${reference}$", f"${predicted}$"
    configs = [LatexExtractionConfig(), ExprExtractionConfig()]
    gold = parse(reference, extraction_config=configs, parsing_timeout=None)
    prediction = parse(predicted, extraction_config=configs, parsing_timeout=None)
    return bool(verify(gold, prediction, timeout_seconds=None))


def verdict(grader: str, reference: str, predicted: str) -> bool:
    """The named grader's verdict on one case; runs in the worker process."""
    if grader == OURS:
        from grading.verifier import is_equivalent

        return is_equivalent(predicted, reference)
    return stock_verdict(reference, predicted, in_dollars=grader == STOCK_DOLLARS)


class TimeLimitedRunner:
    """Runs verdict() in one worker process; a call past the time limit kills the worker and returns None."""

    def __init__(self, timeout_seconds: float):
        self.timeout_seconds = timeout_seconds
        self.timeouts = 0
        self._context = multiprocessing.get_context("spawn")
        self._pool = self._start()

    def _start(self):
        return self._context.Pool(processes=1, initializer=_quiet_math_verify)

    def verdict(self, grader: str, reference: str, predicted: str) -> bool | None:
        pending = self._pool.apply_async(verdict, (grader, reference, predicted))
        try:
            return pending.get(timeout=self.timeout_seconds)
        except multiprocessing.TimeoutError:
            self.timeouts += 1
            self._pool.terminate()
            self._pool = self._start()
            return None

    def close(self) -> None:
        self._pool.terminate()


def percent(agreeing: int, total: int) -> str:
    return f"{100 * agreeing / total:.1f}%"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per check before it counts as wrong")
    arguments = parser.parse_args()
    from importlib.metadata import version

    from tests.grading.equivalence_cases import CASES

    runner = TimeLimitedRunner(arguments.timeout)
    try:
        verdicts = {grader: [runner.verdict(grader, case.reference, case.predicted) for case in CASES]
                    for grader in GRADERS}
    finally:
        runner.close()
    right = {grader: [given == case.equal for given, case in zip(given_verdicts, CASES)]
             for grader, given_verdicts in verdicts.items()}

    equal_count = sum(case.equal for case in CASES)
    print(f"\n{len(CASES)} cases ({equal_count} equal, {len(CASES) - equal_count} unequal); "
          f"math-verify {version('math-verify')}; checks past {arguments.timeout:g} s: {runner.timeouts}")
    for grader in (STOCK_BARE, STOCK_DOLLARS):
        print(f"{grader:<24}{percent(sum(right[grader]), len(CASES)):>7} agree")
    stock = max((STOCK_BARE, STOCK_DOLLARS), key=lambda grader: sum(right[grader]))
    print(f'"math-verify" below: {stock}\n')

    by_category = defaultdict(list)
    for index, case in enumerate(CASES):
        by_category[case.category].append(index)
    print(f"{'category':<16}{'cases':>6}{'math-verify':>13}{'ours':>8}")
    for category, indexes in by_category.items():
        print(f"{category:<16}{len(indexes):>6}"
              f"{percent(sum(right[stock][index] for index in indexes), len(indexes)):>13}"
              f"{percent(sum(right[OURS][index] for index in indexes), len(indexes)):>8}")
    print(f"{'overall':<16}{len(CASES):>6}{percent(sum(right[stock]), len(CASES)):>13}"
          f"{percent(sum(right[OURS]), len(CASES)):>8}")

    wrong = [index for index in range(len(CASES)) if not right[OURS][index]]
    print(f"\nours is wrong on {len(wrong)} (math-verify on {len(CASES) - sum(right[stock])}); "
          f"ids match tests/grading/test_equivalence_collection.py:")
    for index in wrong:
        case = CASES[index]
        given = {True: "equal", False: "unequal", None: "timed out"}[verdicts[OURS][index]]
        print(f"  {case.category}-{index}: predicted {case.predicted!r} vs reference {case.reference!r}: "
              f"should be {'equal' if case.equal else 'unequal'}, ours says {given}"
              f"{'' if right[stock][index] else ' (math-verify wrong too)'}")


if __name__ == "__main__":
    main()
