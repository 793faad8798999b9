"""Reading benchmark files: JSON Lines (plain or gzip) and JSON, with errors naming file and record."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterator

from evaluation.datasets.problems import DatasetError, DatasetMissing


def check_limit(limit: int | None) -> None:
    """A limit is None (everything) or a count of at least 0."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be None or an integer >= 0, got {limit!r}")


def require_file(path: Path) -> Path:
    """Return path, or raise DatasetMissing naming it."""
    if not path.is_file():
        raise DatasetMissing(
            f"benchmark file not found: {path}. Put the benchmark files under {path.parent.parent} "
            f"(the layout of shared/datasets: <benchmark>/<file>), or point MIRRORLAB_DATASETS_DIR at that folder."
        )
    return path


def read_jsonl(path: Path, limit: int | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (location, record) per non-blank line; location reads "<path> line <n>"."""
    check_limit(limit)
    require_file(path)
    opener = gzip.open if path.suffix == ".gz" else open
    count = 0
    try:
        with opener(path, "rb") as handle:
            for line_number, raw_line in enumerate(handle, start=1):
                if limit is not None and count >= limit:
                    return
                location = f"{path} line {line_number}"
                try:
                    text = raw_line.decode("utf-8").strip()
                    if not text:
                        continue
                    record = json.loads(text)
                except (UnicodeDecodeError, json.JSONDecodeError) as error:
                    raise DatasetError(f"{location}: not valid JSON ({error})") from error
                if not isinstance(record, dict):
                    raise DatasetError(f"{location}: expected a JSON object, got {type(record).__name__}")
                count += 1
                yield location, record
    except (gzip.BadGzipFile, EOFError) as error:
        raise DatasetError(f"{path}: not a readable gzip file ({error})") from error


def read_json(path: Path) -> Any:
    """The whole JSON document in path."""
    require_file(path)
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text ({error})") from error
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path} line {error.lineno} column {error.colno}: not valid JSON ({error.msg})") from error


def field_of(record: Any, name: str, kinds: type | tuple[type, ...], location: str) -> Any:
    """record[name], checked to be one of kinds; a DatasetError names the location and field."""
    if not isinstance(record, dict):
        raise DatasetError(f"{location}: expected a JSON object, got {type(record).__name__}")
    if name not in record:
        raise DatasetError(f"{location}: field {name!r} is missing")
    value = record[name]
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join("null" if kind is type(None) else kind.__name__ for kind in kinds)
        raise DatasetError(f"{location}: field {name!r} must be {expected}, got {type(value).__name__}")
    return value
