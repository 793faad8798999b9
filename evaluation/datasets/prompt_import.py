"""Prompt sets from a Hugging Face dataset (a hub id, or a local folder or data file) and a column mapping.

A plain library: no Django. load_prompts is the entry point; it reads the dataset through
evaluation.datasets.hub.hub_load_dataset (the one call that reaches the hub, patched by tests) and
validates every mapped row with common.prompt_files.parse_record, the same checks as file uploads.
One bad row refuses the whole dataset; the error names the row, the field and its column.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from common.knobs import knob
from common.path_rules import PATH_PREFIXES
from common.prompt_files import ParsedPrompt, PromptFileError, parse_record

MAX_IMPORT_ROWS = 1_000_000  # rows one import may read; the web app's prompts-per-set limit applies too
MAPPED_FIELDS = ("problem", "answer", "test_cases", "image", "domain", "difficulty", "tags", "pass_rate")
# Builders of datasets.load_dataset for a single local data file, by file suffix.
LOCAL_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".ndjson": "json", ".parquet": "parquet", ".csv": "csv",
                       ".arrow": "arrow"}


LOCAL_PATH_PREFIXES = PATH_PREFIXES  # a dataset id starting so is a path, never a hub id


class PromptImportError(ValueError):
    """A dataset could not be imported as prompts; the message says which row, field or column and why."""


def column_knob(default: str | None, field: str, extra: str = "") -> Any:
    return knob(default, f"Dataset column that becomes the prompt's {field}{extra}.", group="mapping")


@dataclass(frozen=True)
class PromptImportConfig:
    """Which dataset to read and which of its columns become which prompt fields."""

    dataset_id: str = knob("", "Hub dataset id (owner/name), or the absolute path of a local folder or data file "
                           "(.jsonl, .json, .parquet, .csv) under the deployment's import roots "
                           "(MIRRORLAB_IMPORT_ROOTS).", group="dataset")
    config_name: str | None = knob(None, "Dataset configuration (subset), for datasets that have several "
                                   "(empty = the default one).", group="dataset")
    split: str = knob("train", "Split to import (train, test, ...). A single local file is read as this split.",
                      group="dataset")
    limit: int | None = knob(None, "Import only the first N rows (empty = all rows).", group="dataset", minimum=1,
                             maximum=MAX_IMPORT_ROWS)
    problem_column: str = column_knob("problem", "problem text", " (required)")
    answer_column: str | None = column_knob("answer", "reference answer", " (this or test cases is required)")
    test_cases_column: str | None = column_knob(None, "test cases", ": a list of {input, output} or a JSON string")
    image_column: str | None = column_knob(None, "image", ": an absolute path under the allowed roots")
    domain_column: str | None = column_knob(None, "domain (math, code, ...)")
    difficulty_column: str | None = column_knob(None, "difficulty label")
    tags_column: str | None = column_knob(None, "tags", ": a list of strings, or ';'-separated text")
    pass_rate_column: str | None = column_knob(None, "pass rate", ": a number from 0 to 1")

    def cross_field_errors(self) -> dict[str, str]:
        """A dataset must be named, and responses must be verifiable (an answer or test cases)."""
        errors = {}
        if not self.dataset_id:
            errors["dataset_id"] = "is required"
        if not self.answer_column and not self.test_cases_column:
            errors["answer_column"] = "map a column to answer or to test cases, so responses can be verified"
        return errors

    def mapping(self) -> dict[str, str]:
        """Prompt field -> dataset column, for the fields that are mapped."""
        columns = {field: getattr(self, f"{field}_column") for field in MAPPED_FIELDS}
        return {field: column for field, column in columns.items() if column}


def describe_source(config: PromptImportConfig) -> str:
    """"owner/name (config main, split train)"."""
    parts = [f"config {config.config_name}"] if config.config_name else []
    return f"{config.dataset_id} ({', '.join([*parts, f'split {config.split}'])})"


def load_arguments(config: PromptImportConfig) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Arguments of datasets.load_dataset: a local data file by its builder, else the id (hub or local folder)."""
    path = Path(config.dataset_id).expanduser()
    if config.dataset_id.startswith(LOCAL_PATH_PREFIXES) and not path.exists():
        raise PromptImportError(f"dataset_id: no folder or file {path} on this worker")
    if path.is_file():
        builder = LOCAL_FILE_BUILDERS.get(path.suffix.lower())
        if builder is None:
            raise PromptImportError(f"dataset_id: cannot tell the format of {path}; name it "
                                    f"{', '.join(sorted(LOCAL_FILE_BUILDERS))}")
        return (builder,), {"data_files": {config.split: str(path)}, "split": config.split}
    return (config.dataset_id, config.config_name), {"split": config.split}


def open_dataset(config: PromptImportConfig, load_dataset: Callable[..., Any] | None = None) -> Any:
    """The dataset split, or PromptImportError saying why it did not load."""
    from common.hub_errors import unreachable_hub_errors
    from evaluation.datasets.hub import hub_load_dataset, hub_read_errors

    args, kwargs = load_arguments(config)
    try:
        return (load_dataset or hub_load_dataset)(*args, **kwargs)
    except unreachable_hub_errors() as error:
        raise PromptImportError(f"cannot load dataset {describe_source(config)} from the Hugging Face hub: {error}. "
                                f"Without hub access, copy the dataset to a folder the worker can read and give "
                                f"its path as the dataset id.") from error
    except hub_read_errors() as error:
        raise PromptImportError(f"cannot read dataset {describe_source(config)}: "
                                f"{type(error).__name__}: {error}") from error
    except StopIteration:  # datasets' json builder on an empty file
        raise PromptImportError(f"dataset {describe_source(config)} holds no rows") from None


def check_columns(mapping: Mapping[str, str], columns: Iterable[str], source: str) -> None:
    """Refuse a mapping that names a column the dataset does not have, saying which field and column."""
    columns = list(columns)
    missing = [f"{field}_column names column {column!r}" for field, column in mapping.items() if column not in columns]
    if missing:
        raise PromptImportError(f"{'; '.join(missing)}, which {source} does not have. "
                                f"Its columns: {', '.join(columns)}")


def undecoded_images(dataset: Any, column: str | None) -> Any:
    """Read an Image-feature column as {path, bytes} instead of decoding every picture."""
    features = getattr(dataset, "features", None) or {}
    if column and type(features.get(column)).__name__ == "Image":
        from datasets import Image

        return dataset.cast_column(column, Image(decode=False))
    return dataset


def image_reference(value: Any) -> Any:
    """An undecoded image's path; text stays as it is (parse_record checks it)."""
    if isinstance(value, Mapping):
        if not value.get("path"):
            raise ValueError("'image' holds image bytes without a path; prompt sets keep an image path")
        return value["path"]
    return value


def mapped_record(row: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """A prompt record (field -> value) from one dataset row."""
    record = {field: row[column] for field, column in mapping.items()}
    if "image" in record:
        record["image"] = image_reference(record["image"])
    return record


def row_error(index: int, reason: str, mapping: Mapping[str, str], source: str) -> PromptImportError:
    """"<source> row 3: 'pass_rate' must be ... (column 'rate')"; rows count from 0, as dataset[3]. The field
    is named in the reason as 'answer' or as a place (pass_rate: ..., test_cases[0].output)."""
    columns = [f"{field} <- column {column!r}" for field, column in mapping.items()
               if f"'{field}'" in reason or re.match(rf"{field}\b", reason)]
    hint = f" ({'; '.join(columns)})" if columns else ""
    return PromptImportError(f"{source} row {index}: {reason}{hint}")


def parse_rows(rows: Iterable[Mapping[str, Any]], mapping: Mapping[str, str], source: str,
               limit: int | None = None) -> list[ParsedPrompt]:
    """Every row mapped and validated as an uploaded line would be; the first bad row raises."""
    prompts = []
    for index, row in enumerate(itertools.islice(rows, limit)):
        try:
            prompts.append(parse_record(mapped_record(row, mapping), line=index))
        except PromptFileError as error:
            raise row_error(index, error.reason, mapping, source) from None
        except ValueError as error:
            raise row_error(index, str(error), mapping, source) from None
    if not prompts:
        raise PromptImportError(f"{source} holds no rows")
    return prompts


def load_prompts(config: PromptImportConfig, load_dataset: Callable[..., Any] | None = None) -> list[ParsedPrompt]:
    """The dataset's rows as validated prompts (all of them or an error); load_dataset defaults to the hub's.

    A local CSV file is read as text, cell by cell, as an uploaded CSV is (pandas, under datasets' csv builder,
    turned "025" into 25, a column holding "3.50" into floats and "NA" into a missing answer)."""
    source = describe_source(config)
    mapping = config.mapping()
    csv_file = local_csv(config)
    if csv_file is not None:
        columns, rows = csv_text_rows(csv_file)
        check_columns(mapping, columns, source)
        return parse_rows(rows, mapping, source, config.limit)
    dataset = open_dataset(config, load_dataset)
    check_columns(mapping, dataset.column_names, source)
    dataset = undecoded_images(dataset, mapping.get("image"))
    return parse_rows(exact_float_text(dataset, mapping), mapping, source, config.limit)


def local_csv(config: PromptImportConfig) -> Path | None:
    path = Path(config.dataset_id).expanduser()
    return path if path.is_file() and path.suffix.lower() == ".csv" else None


def csv_text_rows(path: Path) -> tuple[list[str], Iterable[dict[str, str]]]:
    """(columns, rows of text cells) of a CSV file, a byte-order mark dropped."""
    import csv

    handle = path.open(newline="", encoding="utf-8-sig")
    reader = csv.DictReader(handle)
    try:
        columns = list(reader.fieldnames or [])
    except (UnicodeDecodeError, csv.Error) as error:
        handle.close()
        raise PromptImportError(f"cannot read {path} as CSV: {error}") from None
    if not columns:
        handle.close()
        raise PromptImportError(f"{path} holds no rows")

    def rows() -> Iterable[dict[str, str]]:
        with handle:
            yield from reader

    return columns, rows()


def exact_float_text(dataset: Any, mapping: Mapping[str, str]) -> Any:
    """Answer and difficulty columns of float32 or float16 cast to text by Arrow ("0.1"): read as Python floats
    they are their binary value, 0.10000000149011612, which no verifier finds equal to 0.1."""
    features = getattr(dataset, "features", None) or {}
    for field in ("answer", "difficulty"):
        column = mapping.get(field)
        if column and getattr(features.get(column), "dtype", None) in ("float32", "float16"):
            from datasets import Value

            dataset = dataset.cast_column(column, Value("string"))
    return dataset
