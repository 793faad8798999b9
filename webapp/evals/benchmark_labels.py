"""Names of benchmark series: one series per benchmark and suite, since two suites may score one benchmark at
other token limits or sample counts and a curve or comparison across both would mix them."""

from __future__ import annotations

from collections import Counter
from typing import Iterable


def suite_labels(results: Iterable[tuple[str, int, str]]) -> dict[tuple[str, int], str]:
    """(benchmark, suite id, suite name) rows -> {(benchmark, suite id): label}: the benchmark's name where one
    suite scored it, "benchmark (suite)" where several did, and "benchmark (suite #id)" where several of those
    suites share a name (names are unique within a project only)."""
    names: dict[tuple[str, int], str] = {}
    for benchmark, suite_id, suite_name in results:
        names[(benchmark, suite_id)] = suite_name
    suites = Counter(benchmark for benchmark, _ in names)
    named = Counter((benchmark, name) for (benchmark, _), name in names.items())
    labels = {(benchmark, suite_id): _label(benchmark, suite_id, name, suites[benchmark], named[(benchmark, name)])
              for (benchmark, suite_id), name in names.items()}
    taken = Counter(labels.values())  # a suite may itself be named "long #2": then the ids go on until unique
    return {key: label if taken[label] == 1 else f"{label} #{key[1]}" for key, label in labels.items()}


def _label(benchmark: str, suite_id: int, suite_name: str, suites: int, suites_so_named: int) -> str:
    if suites == 1:
        return benchmark
    return f"{benchmark} ({suite_name})" if suites_so_named == 1 else f"{benchmark} ({suite_name} #{suite_id})"
