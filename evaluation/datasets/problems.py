"""The benchmark problem record, the loading errors, and the image checks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

# metadata key holding where a problem's image should be, whether or not it is there.
IMAGE_EXPECTED_AT = "image_expected_at"


@dataclass(frozen=True)
class BenchmarkProblem:
    """One benchmark problem, the same shape for every benchmark.

    test_cases (code benchmarks only) holds dicts of one of two kinds:
    - {"kind": "stdin", "input": str, "output": str}: feed input on stdin, compare stdout.
    - {"kind": "functional", "entry_point": str, "code": str}: `code` defines check(candidate)
      and raises AssertionError on a failure; run the solution, then `code`, then
      `check(<entry_point>)`. entry_point is a Python expression naming the callable
      ("has_close_elements", or "Solution().smallestNumber" for LeetCode-style problems).
    """

    problem_id: str
    prompt: str
    answer: str = ""  # the reference answer; "" for code benchmarks
    test_cases: list[dict[str, str]] = field(default_factory=list)
    choices: list[str] | None = None  # multiple-choice options (MathVista)
    answer_type: str | None = None  # MathVista: "text", "integer", "float" or "list"
    precision: int | None = None  # MathVista float answers: decimal places
    unit: str | None = None  # MathVista: unit of the answer, e.g. "years"
    image: Path | None = None  # local image file, None when absent
    metadata: dict[str, Any] = field(default_factory=dict)


class DatasetError(Exception):
    """A benchmark file cannot be read; the message names the file and the record."""


class DatasetMissing(DatasetError, FileNotFoundError):
    """A benchmark file is not where it is expected; the message names the path."""


class ImagesMissing(DatasetError):
    """Problems need images that are not on disk."""


def _missing_images(problems: Iterable[BenchmarkProblem]) -> list[Path]:
    return [Path(problem.metadata[IMAGE_EXPECTED_AT]) for problem in problems
            if IMAGE_EXPECTED_AT in problem.metadata and (problem.image is None or not problem.image.is_file())]


def images_available(problems: Iterable[BenchmarkProblem]) -> bool:
    """True when every problem that needs an image has it on disk (always true without images)."""
    return not _missing_images(problems)


def require_images(problems: Iterable[BenchmarkProblem]) -> None:
    """Raise ImagesMissing, saying how many images are missing and where they were looked for."""
    problems = list(problems)
    missing = _missing_images(problems)
    if not missing:
        return
    needed = sum(IMAGE_EXPECTED_AT in problem.metadata for problem in problems)
    folders = sorted({str(path.parent) for path in missing})
    raise ImagesMissing(
        f"{len(missing)} of {needed} images are missing (looked in {', '.join(folders)}; "
        f"first missing: {missing[0]}). Put the benchmark's images there "
        f"(for MathVista: unzip images.zip from the MathVista release, or the AI4Math/MathVista "
        f"images, so that {missing[0].parent}/<pid>.jpg exists), or leave this benchmark out of the suite."
    )
