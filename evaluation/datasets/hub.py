"""Benchmark data from the Hugging Face hub, written in the local layout that the loaders read.

A benchmark with files has a hub source (HubSource, named in its module of evaluation.benchmarks) and a
converter from hub records (dicts) to the files of the shared/datasets layout; the loaders then read those
files, so there is one loading code path. fetch_files is the single entry point to the hub (tests pass
load_dataset, or patch hub_load_dataset). Files are written to a staging folder beside them, checked by the
benchmark's loader, then renamed into place: a failure leaves no new or half-written file behind.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol

from common.hub_errors import unreachable_hub_errors
from evaluation.datasets.code_benchmarks import LIVECODEBENCH_WINDOW
from evaluation.datasets.problems import BenchmarkProblem, DatasetError, DatasetMissing, require_images

# A converter turns hub records into (path relative to data_dir, file bytes) pairs.
Converter = Callable[[Iterable[Mapping[str, Any]], str], Iterator[tuple[str, bytes]]]


class HubUnavailable(DatasetMissing):
    """The hub could not be reached (offline, no network) or does not serve the dataset."""


class BenchmarkFilesExist(DatasetError, FileExistsError):
    """Fetching would replace local benchmark files, and overwrite was not asked for."""


@dataclass(frozen=True)
class HubSource:
    """Where a benchmark lives on the hub and which local files its converter writes."""

    dataset_id: str
    split: str
    files: tuple[str, ...]  # the files the loader reads, relative to data_dir
    convert: Converter
    config: str | None = None
    data_files: tuple[str, ...] = ()  # repo files read with the "json" builder (repos with a loading script)
    image_column: str | None = None  # an image column read undecoded, so JPEG bytes are kept as they are
    images: str | None = None  # where the converter writes the images, relative to data_dir ("<folder>/<pid>.jpg")
    note: str = ""

    def load_arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments for datasets.load_dataset."""
        if self.data_files:
            urls = [f"hf://datasets/{self.dataset_id}/{name}" for name in self.data_files]
            return ("json",), {"data_files": urls, "split": self.split}
        return (self.dataset_id, self.config), {"split": self.split}

    def describe(self) -> str:
        """"openai/gsm8k (config main, split test)"; the note stands for config and split when given."""
        if self.note:
            return f"{self.dataset_id} ({self.note})"
        parts = [f"config {self.config}"] if self.config else []
        return f"{self.dataset_id} ({', '.join([*parts, f'split {self.split}'])})"


class FileBenchmark(Protocol):
    """What fetching needs of a benchmark (evaluation.benchmarks.BenchmarkSpec): its name, hub source and loader."""

    name: str
    hub: HubSource

    def read(self, data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
        """The problems of the benchmark's files under data_dir."""


def hub_field(record: Any, location: str, name: str, *alternatives: str) -> Any:
    """record[name] (or the first alternative present), not None; a DatasetError names row and field."""
    if not isinstance(record, Mapping):
        raise DatasetError(f"{location}: expected a record (a mapping), got {type(record).__name__}")
    for key in (name, *alternatives):
        if key in record and record[key] is not None:
            return record[key]
    names = " or ".join(repr(key) for key in (name, *alternatives))
    raise DatasetError(f"{location}: field {names} is missing or empty")


def jsonl_bytes(records: Iterable[dict[str, Any]]) -> bytes:
    """One JSON object per line, UTF-8."""
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8")


def rows(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(location, record) pairs; location reads "<dataset id> row <n>"."""
    for index, record in enumerate(records):
        yield f"{dataset_id} row {index}", record


# --- math benchmarks -------------------------------------------------------------------------------

def convert_aime24(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """HuggingFaceH4/aime_2024 (id, problem, solution, answer, url, year) -> aime24/test.jsonl."""
    lines = [{"id": hub_field(record, location, "id"), "problem": hub_field(record, location, "problem"),
              "solution": record.get("solution"), "answer": hub_field(record, location, "answer"),
              "url": record.get("url"), "year": record.get("year")}
             for location, record in rows(records, dataset_id)]
    yield "aime24/test.jsonl", jsonl_bytes(lines)


def convert_aime25(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """math-ai/aime25 (problem, answer, id) -> aime25/aime25.jsonl (prompt, answer; the bare problem text)."""
    lines = [{"prompt": hub_field(record, location, "problem"), "answer": hub_field(record, location, "answer"),
              "id": record.get("id")}
             for location, record in rows(records, dataset_id)]
    yield "aime25/aime25.jsonl", jsonl_bytes(lines)


def convert_amc23(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """math-ai/amc23 (id, question, answer, url) -> amc23/test.jsonl (id, problem, answer, url, question)."""
    lines = []
    for index, (location, record) in enumerate(rows(records, dataset_id)):
        problem = hub_field(record, location, "question", "problem")
        record_id = record.get("id")
        lines.append({"id": index if record_id is None else record_id, "problem": problem,
                      "answer": hub_field(record, location, "answer"), "url": record.get("url"), "question": problem})
    yield "amc23/test.jsonl", jsonl_bytes(lines)


def convert_math500(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """HuggingFaceH4/MATH-500 -> math500/test.jsonl (the same six fields as OpenAI's split file)."""
    names = ("problem", "solution", "answer", "subject", "level", "unique_id")
    lines = [{name: hub_field(record, location, name) for name in names}
             for location, record in rows(records, dataset_id)]
    yield "math500/test.jsonl", jsonl_bytes(lines)


def convert_gsm8k(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """openai/gsm8k main -> gsm8k/test.jsonl (question, answer with the "#### <final>" line)."""
    lines = [{"question": hub_field(record, location, "question"), "answer": hub_field(record, location, "answer")}
             for location, record in rows(records, dataset_id)]
    yield "gsm8k/test.jsonl", jsonl_bytes(lines)


# --- code benchmarks -------------------------------------------------------------------------------

def convert_humaneval(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """openai/openai_humaneval -> humaneval/HumanEval.jsonl.gz (the release's fields, gzip as shipped)."""
    names = ("task_id", "prompt", "entry_point", "canonical_solution", "test")
    lines = [{name: hub_field(record, location, name) for name in names}
             for location, record in rows(records, dataset_id)]
    yield "humaneval/HumanEval.jsonl.gz", gzip.compress(jsonl_bytes(lines), mtime=0)


# The shared LiveCodeBench slice: release_v5 problems dated 2024-08-01 .. 2025-01-31 (279 problems).
LIVECODEBENCH_RELEASE_V5 = ("test.jsonl", "test2.jsonl", "test3.jsonl", "test4.jsonl", "test5.jsonl")
# The generation prompt of the shared livecodebench_v5.jsonl (QwQ's format of LiveCodeBench's prompt).
LIVECODEBENCH_PREAMBLE = ("You will be given a question (problem specification) and will generate a correct Python "
                          "program that matches the specification and passes all tests.")
LIVECODEBENCH_WITH_STARTER = ("You will use the following starter code to write the solution to the problem and "
                              "enclose your code within delimiters.")
LIVECODEBENCH_WITHOUT_STARTER = (
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on the "
    "sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program runs, "
    "it reads the inputs, runs the algorithm and writes output to STDOUT.")


def livecodebench_prompt(statement: str, starter_code: str) -> str:
    """The full generation prompt: preamble, "Question: <statement>", then the format instruction."""
    prompt = f"{LIVECODEBENCH_PREAMBLE}\n\nQuestion: {statement}\n\n"
    if starter_code:
        return prompt + f"{LIVECODEBENCH_WITH_STARTER}\n```python\n{starter_code}\n```\n\n"
    return prompt + f"{LIVECODEBENCH_WITHOUT_STARTER}\n```python\n# YOUR CODE HERE\n```\n\n"


def iso_date(value: Any, location: str) -> str:
    """contest_date as ISO text: the hub's string, or the datetime that Arrow's JSON reader may infer."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, str):
        return value
    raise DatasetError(f"{location}: field 'contest_date' must be a date, got {type(value).__name__}")


def public_tests(raw: Any, location: str) -> list[dict[str, Any]]:
    """public_test_cases (a JSON string on the hub) as a list of {input, output, testtype}."""
    try:
        tests = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as error:
        raise DatasetError(f"{location}: field 'public_test_cases' is not valid JSON ({error})") from error
    if not isinstance(tests, list) or not tests:
        raise DatasetError(f"{location}: field 'public_test_cases' holds no tests")
    return [{"input": test.get("input"), "output": test.get("output"), "testtype": test.get("testtype")}
            if isinstance(test, Mapping) else test for test in tests]


def convert_livecodebench(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """livecodebench/code_generation_lite release_v5 -> the problem list and its PUBLIC tests, in one order.

    Private tests (zlib + base64 + pickled JSON on the hub) are not fetched: the loader grades on
    public tests (metadata test_set "public"). global_id is the problem's position in release_v5.
    """
    start, end = LIVECODEBENCH_WINDOW
    listings, public = [], []
    for position, (location, record) in enumerate(rows(records, dataset_id)):
        contest_date = iso_date(hub_field(record, location, "contest_date"), location)
        if not start <= contest_date < end:
            continue
        statement = hub_field(record, location, "question_content")
        starter_code = record.get("starter_code") or ""
        listings.append({"global_id": position, "question_id": str(hub_field(record, location, "question_id")),
                         "contest_id": hub_field(record, location, "contest_id"), "contest_date": contest_date,
                         "prompt": livecodebench_prompt(statement, starter_code),
                         "platform": record.get("platform"), "difficulty": record.get("difficulty"),
                         "question_title": record.get("question_title")})
        public.append({"problem": statement, "starter_code": starter_code,
                       "tests": public_tests(hub_field(record, location, "public_test_cases"), location)})
    if not listings:
        raise DatasetError(f"{dataset_id}: no problem dated {start} .. {end} (exclusive) in release_v5")
    yield "livecodebench/livecodebench_v5.jsonl", jsonl_bytes(listings)
    yield "livecodebench/livecodebench_public_tests.json", json.dumps(public, ensure_ascii=False, indent=4).encode()


# --- MathVista -------------------------------------------------------------------------------------

SAFE_PID = re.compile(r"[A-Za-z0-9_-]+")
JPEG_MAGIC = b"\xff\xd8\xff"


def jpeg_bytes(image: Any, location: str) -> bytes:
    """The image as JPEG bytes: hub JPEG bytes unchanged, anything else (PNG, a PIL image) re-encoded."""
    if isinstance(image, Mapping):  # an undecoded datasets Image: {"bytes": ..., "path": ...}
        image = image.get("bytes")
    if isinstance(image, (bytes, bytearray)):
        if bytes(image[:3]) == JPEG_MAGIC:
            return bytes(image)
        from PIL import Image, UnidentifiedImageError

        try:
            image = Image.open(io.BytesIO(image))
        except UnidentifiedImageError as error:
            raise DatasetError(f"{location}: field 'decoded_image' is not a readable image ({error})") from error
    if not hasattr(image, "save"):
        raise DatasetError(f"{location}: field 'decoded_image' must be an image, got {type(image).__name__}")
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")  # JPEG holds neither transparency nor a palette
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=95)
    return buffer.getvalue()


def decimal_precision(value: Any) -> float | None:
    """MathVista's precision with a missing value (None, or NaN from a dataframe) as None."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def convert_mathvista(records: Iterable[Mapping[str, Any]], dataset_id: str) -> Iterator[tuple[str, bytes]]:
    """AI4Math/MathVista testmini -> mathvista/images/<pid>.jpg and mathvista/testmini.json keyed by pid."""
    annotations: dict[str, dict[str, Any]] = {}
    for location, record in rows(records, dataset_id):
        pid = str(hub_field(record, location, "pid"))
        if not SAFE_PID.fullmatch(pid) or pid in annotations:
            raise DatasetError(f"{location}: pid {pid!r} is not a unique name of letters, digits, '_' or '-'")
        image = f"images/{pid}.jpg"
        yield f"mathvista/{image}", jpeg_bytes(hub_field(record, location, "decoded_image"), location)
        choices = record.get("choices")
        annotations[pid] = {
            "question": hub_field(record, location, "question"), "image": image,
            "choices": list(choices) if choices is not None else None, "unit": record.get("unit"),
            "precision": decimal_precision(record.get("precision")), "answer": hub_field(record, location, "answer"),
            "question_type": hub_field(record, location, "question_type"),
            "answer_type": hub_field(record, location, "answer_type"), "pid": pid,
            "metadata": dict(hub_field(record, location, "metadata")), "query": record.get("query"),
        }
    yield "mathvista/testmini.json", json.dumps(annotations, ensure_ascii=False, indent=4).encode("utf-8")


def hub_load_dataset(*args: Any, **kwargs: Any) -> Any:
    """datasets.load_dataset: the one call that reaches the hub (tests patch this name)."""
    import datasets

    return datasets.load_dataset(*args, **kwargs)


def hub_read_errors() -> tuple[type[BaseException], ...]:
    """Errors of a dataset that was reached but did not load: datasets' own errors, files, bad arguments."""
    try:
        from datasets.exceptions import DatasetsError
    except ImportError:
        return (OSError, ValueError)
    return (OSError, ValueError, DatasetsError)


def local_fallback(source: HubSource, data_dir: Path) -> str:
    """Where the user can put the benchmark's files instead of fetching them."""
    files = ", ".join(str(data_dir / path) for path in source.files)
    images = f" and the images as {data_dir / source.images}" if source.images else ""
    return (f"put its files in place instead: {files}{images} (the layout of shared/datasets), "
            f"or point MIRRORLAB_DATASETS_DIR at a folder that has them")


def hub_records(name: str, source: HubSource, data_dir: Path,
                load_dataset: Callable[..., Any]) -> Iterable[Mapping[str, Any]]:
    """The benchmark's hub records; HubUnavailable names benchmark, hub id and the local files to fill."""
    args, kwargs = source.load_arguments()
    try:
        dataset = load_dataset(*args, **kwargs)
    except unreachable_hub_errors() as error:
        reason = str(error).rstrip(".")
        raise HubUnavailable(f"cannot fetch benchmark {name!r} from the Hugging Face hub, {source.describe()}: "
                             f"{reason}. Without hub access, {local_fallback(source, data_dir)}.") from error
    except hub_read_errors() as error:  # reached the hub, but the dataset did not load (a bad split, a bad file)
        raise DatasetError(f"cannot read benchmark {name!r} from the Hugging Face hub, {source.describe()}: "
                           f"{type(error).__name__}: {error}") from error
    if source.image_column and hasattr(dataset, "cast_column"):
        from datasets import Image

        dataset = dataset.cast_column(source.image_column, Image(decode=False))
    return dataset


def refuse_existing(data_dir: Path, relative_paths: Iterable[str], name: str) -> None:
    """Raise BenchmarkFilesExist when any of the paths is already there."""
    existing = [str(data_dir / path) for path in relative_paths if (data_dir / path).exists()]
    if existing:
        shown = ", ".join(existing[:3]) + (f" and {len(existing) - 3} more" if len(existing) > 3 else "")
        raise BenchmarkFilesExist(f"{name}: {shown} already exist; pass overwrite=True (--overwrite) to replace them")


def safe_relative(path: str) -> Path:
    """A converter's output path, refused when it would leave data_dir."""
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts:
        raise DatasetError(f"refusing to write outside the data folder: {path!r}")
    return relative


def stage_files(files: Iterator[tuple[str, bytes]], staging: Path, data_dir: Path, name: str,
                overwrite: bool) -> list[Path]:
    """Write each converted file under staging; return their relative paths."""
    written: list[Path] = []
    for path, content in files:
        relative = safe_relative(path)
        if not overwrite:
            refuse_existing(data_dir, [str(relative)], name)
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        (staging / relative).write_bytes(content)
        written.append(relative)
    return written


def check_staged(benchmark: FileBenchmark, staging: Path) -> None:
    """Read the staged files with the benchmark's own loader (images included), so nothing unreadable is installed."""
    try:
        require_images(benchmark.read(staging))  # no-op for problems without images
    except DatasetError as error:
        raise DatasetError(f"{benchmark.name}: the files converted from {benchmark.hub.dataset_id} do not load "
                           f"({error}); nothing was written") from error


def move_into_place(relative_paths: list[Path], staging: Path, data_dir: Path) -> None:
    """Rename each staged file over its target; on a failure put every target back as it was."""
    backups = staging / ".replaced"
    done: list[tuple[Path, Path | None]] = []  # (target, backup of the file it replaced)
    try:
        for index, relative in enumerate(relative_paths):
            target = data_dir / relative
            backup = None
            if target.exists():
                backups.mkdir(exist_ok=True)
                backup = backups / str(index)
                os.replace(target, backup)
            done.append((target, backup))
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / relative, target)
    except OSError:
        for target, backup in reversed(done):
            if backup is not None and backup.exists():
                os.replace(backup, target)
            elif backup is None:
                target.unlink(missing_ok=True)
        raise


def fetch_files(benchmark: FileBenchmark, data_dir: Path, *, load_dataset: Callable[..., Any] | None = None,
                overwrite: bool = False) -> list[Path]:
    """Download the benchmark from the hub into data_dir in its loader's layout; return the files written.

    load_dataset defaults to datasets.load_dataset. Existing files are refused unless overwrite.
    """
    name, source = benchmark.name, benchmark.hub
    data_dir = Path(data_dir)
    if not overwrite:
        refuse_existing(data_dir, source.files, name)
    records = hub_records(name, source, data_dir, load_dataset or hub_load_dataset)
    data_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".fetch-{name}-", dir=data_dir))  # same filesystem: atomic renames
    try:
        written = stage_files(source.convert(records, source.dataset_id), staging, data_dir, name, overwrite)
        check_staged(benchmark, staging)
        move_into_place(written, staging, data_dir)
    finally:
        shutil.rmtree(staging)
    return [data_dir / relative for relative in written]


def local_status(benchmark: FileBenchmark, data_dir: Path) -> str:
    """"present", "missing: <files>", or for a benchmark with images how many of them are on disk."""
    data_dir = Path(data_dir)
    missing = [path for path in benchmark.hub.files if not (data_dir / path).is_file()]
    if missing:
        return f"missing: {', '.join(missing)}"
    if not benchmark.hub.images:
        return "present"
    try:
        problems = benchmark.read(data_dir)
    except DatasetError as error:
        return f"unreadable: {error}"
    with_images = sum(problem.image is not None for problem in problems)
    if with_images == len(problems):
        return "present"
    return f"annotations present, {with_images} of {len(problems)} images"
