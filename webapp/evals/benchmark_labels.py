"""Names of benchmark series: one series per benchmark and suite, since two suites may score one benchmark at
other token limits or sample counts and a curve or comparison across both would mix them."""

from __future__ import annotations

from typing import Iterable


def suite_labels(results: Iterable[tuple[str, int, str]]) -> dict[tuple[str, int], str]:
    """(benchmark, suite id, suite name) rows -> {(benchmark, suite id): label}: the benchmark's name where one
    suite scored it, "benchmark (suite)" where several did."""
    names: dict[tuple[str, int], str] = {}
    suites: dict[str, set[int]] = {}
    for benchmark, suite_id, suite_name in results:
        names[(benchmark, suite_id)] = suite_name
        suites.setdefault(benchmark, set()).add(suite_id)
    return {(benchmark, suite_id): benchmark if len(suites[benchmark]) == 1 else f"{benchmark} ({suite_name})"
            for (benchmark, suite_id), suite_name in names.items()}
