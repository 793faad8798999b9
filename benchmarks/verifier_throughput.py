"""Math verifier checks per second on a MATH-500 answer mix, ours against stock math-verify, side by side.

The workload: every MATH-500 reference answer (from ../shared/datasets/math500, or a built-in MATH-style
mix when absent) answered four ways inside a boxed response: twice rewritten in an equal form (spacing,
\\dfrac, \\left( \\right), $...$) and twice wrong (its last or first digit changed). Every pair is a new
(answer, reference) key, so the verdict cache never answers. Rows: our MathVerifier (warm worker pool,
batched as RL rewards are), the same one pair at a time, and stock math-verify (parse and verify of the
two strings in $...$) in this process. Agreement is with the intended verdict of each rewrite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MATH500 = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "math500" / "test.jsonl"
BUILT_IN_ANSWERS = ["\\frac{14}{3}", "2\\sqrt{5}", "(3, \\frac{\\pi}{2})", "[1, 3)", "6+9i", "p - q", "27648",
                    "\\text{Evelyn}", "-2,1", "\\begin{pmatrix} -1 \\\\ 2 \\end{pmatrix}", "76^\\circ", "\\$18.90"]


def reference_answers(path: Path) -> tuple[list[str], str]:
    if path.exists():
        answers = [json.loads(line)["answer"] for line in path.read_text().splitlines() if line.strip()]
        return answers, f"MATH-500 ({len(answers)} answers)"
    return BUILT_IN_ANSWERS * 40, f"built-in MATH-style mix ({path} not found)"


def _bump_digit(text: str, which: int) -> str | None:
    digits = list(re.finditer(r"(?<!\^)\d", text))  # not a unit's power (cm^2)
    if not digits:
        return None
    position = digits[which].start()
    return text[:position] + str((int(text[position]) + 1) % 10) + text[position + 1:]


def rewrites(reference: str) -> list[tuple[str, bool]]:
    """(answer, intended verdict): two equal rewrites, then up to two wrong ones."""
    spaced = re.sub(r"\s*,\s*(?!\d{3}\b)", ", ", reference).replace("\\frac", "\\dfrac").replace("+", " + ")
    delimited = "$" + reference.replace("(", "\\left(").replace(")", "\\right)") + "$"
    pairs = [(spaced, True), (delimited, True)]
    for which in (-1, 0):
        wrong = _bump_digit(reference, which)
        if wrong is not None and wrong != reference and (which == -1 or wrong != _bump_digit(reference, -1)):
            pairs.append((wrong, False))
    return pairs


def workload(answers: list[str]) -> list[tuple[str, str, bool]]:
    """(response, reference, intended verdict) for every rewrite of every reference."""
    return [(f"We work it out step by step.\nSo the answer is $\\boxed{{{answer}}}$.", reference, verdict)
            for reference in answers for answer, verdict in rewrites(reference)]


def stock_math_verify(pairs: list[tuple[str, str]]) -> list[bool]:
    """Stock math-verify: parse the boxed response and the reference in $...$, then verify."""
    import logging

    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)  # its "timeout is disabled" warnings

    configs = [LatexExtractionConfig(), ExprExtractionConfig()]
    verdicts = []
    for response, reference in pairs:
        gold = parse(f"${reference}$", extraction_config=configs, parsing_timeout=None)
        answer = parse(response, extraction_config=configs, parsing_timeout=None)
        verdicts.append(bool(verify(gold, answer, timeout_seconds=None)))
    return verdicts


def timed(function, *arguments) -> tuple[float, object]:
    started = time.perf_counter()
    value = function(*arguments)
    return time.perf_counter() - started, value


def agreement(verdicts: list[bool], intended: list[bool]) -> float:
    return sum(a == b for a, b in zip(verdicts, intended)) / len(intended)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=Path, default=MATH500, help="a MATH-500 test.jsonl")
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    parser.add_argument("--stock-checks", type=int, default=400, help="checks timed for stock math-verify")
    arguments = parser.parse_args()
    from grading.verifier import MathVerifier

    answers, source = reference_answers(arguments.answers)
    checks = workload(answers)
    pairs = [(response, reference) for response, reference, _ in checks]
    intended = [verdict for _, _, verdict in checks]
    half = len(pairs) // 2
    with MathVerifier(workers=arguments.workers, timeout_seconds=10) as verifier:
        verifier.check("\\boxed{\\log_2 8}", "3")  # start the pool outside the timings
        batch_seconds, batch_results = timed(verifier.check_many, pairs[:half])
        single_seconds, single_results = timed(lambda: [verifier.check(*pair) for pair in pairs[half:]])
        stats = verifier.stats()
    ours = [result.correct for result in batch_results + single_results]
    stock_pairs, stock_intended = pairs[:arguments.stock_checks], intended[:arguments.stock_checks]
    stock_seconds, stock = timed(stock_math_verify, stock_pairs)

    print(f"\n{source}: {len(pairs)} checks ({sum(intended)} meant equal), {arguments.workers} workers, "
          f"{os.cpu_count()} cores; {stats.worker_checks} checks went to math-verify in a worker "
          f"({stats.worker_checks / len(pairs):.1%}), {stats.timeouts} timed out")
    print(f"{'grader':<34}{'checks':>8}{'seconds':>9}{'checks/s':>10}{'agreement':>11}")
    rows = [("ours, warm pool, batched", half, batch_seconds, agreement(ours[:half], intended[:half])),
            ("ours, warm pool, one at a time", len(pairs) - half, single_seconds,
             agreement(ours[half:], intended[half:])),
            ("stock math-verify, in-process", len(stock_pairs), stock_seconds, agreement(stock, stock_intended))]
    for name, count, seconds, agreed in rows:
        print(f"{name:<34}{count:>8}{seconds:>9.2f}{count / seconds:>10.0f}{agreed:>11.1%}")
    ours_on_stock_pairs = agreement(ours[:len(stock_pairs)], stock_intended)
    print(f"on the same {len(stock_pairs)} checks: ours {ours_on_stock_pairs:.1%}, stock {rows[2][3]:.1%}; "
          f"ours batched / stock: {(half / batch_seconds) / (len(stock_pairs) / stock_seconds):.1f}x checks/s")
    misses = [(response.split("boxed{")[1][:-3], reference, verdict)
              for (response, reference, verdict), mine in zip(checks, ours) if mine != verdict]
    print(f"ours differs from the intended verdict on {len(misses)}:")
    for answer, reference, verdict in misses[:15]:
        print(f"  {answer!r} against {reference!r}: meant {'equal' if verdict else 'unequal'}")


if __name__ == "__main__":
    main()
