"""MathVista testmini (1000 problems): annotations from testmini.json, images from an images/ folder."""

from __future__ import annotations

from pathlib import Path

from evaluation.datasets.files import check_limit, field_of, read_json
from evaluation.datasets.problems import IMAGE_EXPECTED_AT, BenchmarkProblem, DatasetError


def decimal_places(precision: int | float | None) -> int | None:
    """MathVista's precision (decimal places of a float answer) as an int: 2.0 -> 2."""
    return None if precision is None else int(precision)


def load_mathvista(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """MathVista testmini; image is the local file (mathvista/images/<pid>.jpg) or None when absent.

    Use require_images() before evaluating: the images are not in the shared datasets.
    """
    check_limit(limit)
    folder = Path(data_dir) / "mathvista"
    path = folder / "testmini.json"
    records = read_json(path)
    if not isinstance(records, dict):
        raise DatasetError(f"{path}: expected a JSON object keyed by pid, got {type(records).__name__}")
    problems = []
    for key, record in list(records.items())[:limit]:
        location = f"{path} record {key!r}"
        question_type = field_of(record, "question_type", str, location)
        choices = field_of(record, "choices", (list, type(None)), location)
        if question_type == "multi_choice" and not choices:
            raise DatasetError(f"{location}: a multi_choice question has no choices")
        image_path = folder / field_of(record, "image", str, location)
        problems.append(BenchmarkProblem(
            problem_id=str(field_of(record, "pid", (str, int), location)),
            prompt=field_of(record, "question", str, location),
            answer=str(field_of(record, "answer", (str, int, float), location)),
            choices=[str(choice) for choice in choices] if choices is not None else None,
            answer_type=field_of(record, "answer_type", str, location),
            precision=decimal_places(field_of(record, "precision", (int, float, type(None)), location)),
            unit=field_of(record, "unit", (str, type(None)), location),
            image=image_path if image_path.is_file() else None,
            metadata={**field_of(record, "metadata", dict, location), "question_type": question_type,
                      IMAGE_EXPECTED_AT: str(image_path)},
        ))
    return problems
