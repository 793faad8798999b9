"""Hub downloads: fake hub records go through fetch_benchmark into files that the existing loaders read."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from datasets import Dataset
from PIL import Image

from evaluation.benchmarks import HUB_SOURCES, LOADERS, fetch_benchmark, load_benchmark
from evaluation.datasets import (
    DatasetError,
    DatasetMissing,
    images_available,
    load_livecodebench,
    require_images,
)
from evaluation.datasets import __main__ as cli
from evaluation.datasets import hub
from evaluation.datasets.hub import (
    BenchmarkFilesExist,
    HubUnavailable,
    livecodebench_prompt,
)
from tests.evaluation.functional_cases import run_functional

SHARED_DATA_DIR = Path(__file__).parents[2].parent / "shared" / "datasets"

AIME24_ROWS = [
    {"id": 60, "problem": "Every morning Aya goes for a $9$-kilometer-long walk.", "solution": "$s=2.5$ ...",
     "answer": "204", "url": "https://artofproblemsolving.com/wiki/2024_AIME_I_Problems/Problem_1", "year": "2024"},
    {"id": 67, "problem": "Find the number of rectangles.", "solution": "...", "answer": "025",
     "url": "https://artofproblemsolving.com/wiki/2024_AIME_I_Problems/Problem_8", "year": "2024"},
]
AIME25_ROWS = [
    {"problem": "Find the sum of all integer bases $b>9$ for which $17_b$ is a divisor of $97_b.$",
     "answer": "70", "id": "0"},
    {"problem": "On $\\triangle ABC$ points $A, D, E$, and $B$ lie in that order.", "answer": "588", "id": "1"},
]
AMC23_ROWS = [
    {"id": 0, "question": "Cities $A$ and $B$ are $45$ miles apart. How many miles from City $A$ will they meet?",
     "answer": 27.0, "url": "https://artofproblemsolving.com/wiki/2023_AMC_12A_Problems/Problem_1"},
    {"id": 1, "question": "What is the product of all solutions?", "answer": -1.0,
     "url": "https://artofproblemsolving.com/wiki/2023_AMC_12A_Problems/Problem_2"},
]
MATH500_ROWS = [
    {"problem": "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.",
     "solution": "... $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.$", "answer": "\\left( 3, \\frac{\\pi}{2} \\right)",
     "subject": "Precalculus", "level": 2, "unique_id": "test/precalculus/807.json"},
    {"problem": "What is $1+1$?", "solution": "$\\boxed{2}$", "answer": "2", "subject": "Prealgebra", "level": 1,
     "unique_id": "test/prealgebra/1.json"},
]
GSM8K_ROWS = [
    {"question": "Janet's ducks lay 16 eggs per day. How much does she make?",
     "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n#### 18"},
    {"question": "A shop sells 1,600 pens. How many?", "answer": "It sells 1,600 pens.\n#### 1,600"},
]
HUMANEVAL_ROWS = [
    {"task_id": "HumanEval/0",
     "prompt": "def add(a: int, b: int) -> int:\n    \"\"\" Add two numbers.\n    >>> add(2, 3)\n    5\n    \"\"\"\n",
     "canonical_solution": "    return a + b\n",
     "test": "\n\ndef check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n",
     "entry_point": "add"},
]

ATCODER_STATEMENT = "You are given N integers. Print their sum.\n\nSample Input 1\n\n3\n1 2 3\n\nSample Output 1\n\n6"
LEETCODE_STATEMENT = "You are given a positive number n.\nReturn the smallest number x >= n whose bits are all set."
LEETCODE_STARTER = "class Solution:\n    def smallestNumber(self, n: int) -> int:\n        "


def livecodebench_row(question_id: str, contest_id: str, contest_date: Any, statement: str, starter_code: str,
                      tests: list[dict[str, str]], platform: str) -> dict[str, Any]:
    """A record of livecodebench/code_generation_lite (public tests as a JSON string, private ones encoded)."""
    return {"question_title": f"title of {question_id}", "question_content": statement, "platform": platform,
            "question_id": question_id, "contest_id": contest_id, "contest_date": contest_date,
            "starter_code": starter_code, "difficulty": "easy", "public_test_cases": json.dumps(tests),
            "private_test_cases": "eJzLSM3JyQcABiwCFQ==", "metadata": json.dumps({})}


def livecodebench_rows(date_type: type = str) -> list[dict[str, Any]]:
    """Four problems: one before the shared window, two inside it, one after."""
    def when(text: str) -> Any:
        return text if date_type is str else datetime.fromisoformat(text)

    stdin_tests = [{"input": "3\n1 2 3\n", "output": "6\n", "testtype": "stdin"}]
    functional_tests = [{"input": "5", "output": "7", "testtype": "functional"},
                        {"input": "10", "output": "15", "testtype": "functional"}]
    return [
        livecodebench_row("abc350_a", "abc350", when("2024-04-20T00:00:00"), ATCODER_STATEMENT, "", stdin_tests,
                          "atcoder"),
        livecodebench_row("abc365_b", "abc365", when("2024-08-03T00:00:00"), ATCODER_STATEMENT, "", stdin_tests,
                          "atcoder"),
        livecodebench_row("3676", "weekly-contest-426", when("2024-11-30T18:30:00"), LEETCODE_STATEMENT,
                          LEETCODE_STARTER, functional_tests, "leetcode"),
        livecodebench_row("abc390_a", "abc390", when("2025-02-01T00:00:00"), ATCODER_STATEMENT, "", stdin_tests,
                          "atcoder"),
    ]


def tiny_image(mode: str = "RGB") -> Image.Image:
    return Image.new(mode, (4, 3), color=(200, 30, 30) if mode == "RGB" else 1)


def mathvista_rows() -> list[dict[str, Any]]:
    metadata = {"split": "testmini", "language": "english", "img_width": 4, "img_height": 3, "source": "SciBench",
                "category": "math-targeted-vqa", "task": "textbook question answering", "context": "scientific figure",
                "grade": "college", "skills": ["scientific reasoning"]}
    return [
        {"pid": "1", "question": "By what distance d is the spring compressed?", "image": "images/1.jpg",
         "decoded_image": tiny_image("RGB"), "choices": None, "unit": None, "precision": 1.0, "answer": "1.2",
         "question_type": "free_form", "answer_type": "float", "metadata": metadata,
         "query": "Hint: ... Question: By what distance d is the spring compressed?"},
        {"pid": "5", "question": "Find $m\\angle H$", "image": "images/5.jpg", "decoded_image": tiny_image("P"),
         "choices": ["97", "102", "107", "122"], "unit": None, "precision": None, "answer": "97",
         "question_type": "multi_choice", "answer_type": "text", "metadata": {**metadata, "source": "Geometry3K"},
         "query": "Hint: ... Choices: (A) 97 (B) 102 (C) 107 (D) 122"},
    ]


HUB_ROWS = {
    "HuggingFaceH4/aime_2024": AIME24_ROWS, "math-ai/aime25": AIME25_ROWS, "math-ai/amc23": AMC23_ROWS,
    "HuggingFaceH4/MATH-500": MATH500_ROWS, "openai/gsm8k": GSM8K_ROWS, "openai/openai_humaneval": HUMANEVAL_ROWS,
    "livecodebench/code_generation_lite": livecodebench_rows(), "AI4Math/MathVista": mathvista_rows(),
}


class FakeHub:
    """Stands in for datasets.load_dataset: checks the arguments, returns in-memory hub records."""

    def __init__(self, rows: dict[str, list[dict[str, Any]]] | None = None, as_dataset: bool = True):
        self.rows = HUB_ROWS if rows is None else rows
        self.as_dataset = as_dataset
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def __call__(self, path: str, name: str | None = None, *, split: str, data_files: list[str] | None = None):
        self.calls.append(((path, name), {"split": split, "data_files": data_files}))
        if path == "json":  # LiveCodeBench: its repo has a loading script, so its files are read directly
            prefix = "hf://datasets/livecodebench/code_generation_lite/"
            assert data_files == [prefix + name for name in hub.LIVECODEBENCH_RELEASE_V5] and split == "train"
            path = "livecodebench/code_generation_lite"
        else:
            source = next(source for source in HUB_SOURCES.values() if source.dataset_id == path)
            assert (name, split) == (source.config, source.split)
        rows = self.rows[path]
        return Dataset.from_list(rows) if self.as_dataset else rows


def fetch(name: str, data_dir: Path, **kwargs: Any) -> list[Path]:
    return fetch_benchmark(name, data_dir, load_dataset=kwargs.pop("load_dataset", FakeHub()), **kwargs)


def by_id(problems):
    return {problem.problem_id: problem for problem in problems}


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


def test_every_loader_has_a_hub_source():
    assert set(HUB_SOURCES) == set(LOADERS)


def test_it_fetches_aime24_with_integer_answers(tmp_path):
    written = fetch("aime24", tmp_path)
    assert written == [tmp_path / "aime24" / "test.jsonl"]
    problems = by_id(load_benchmark("aime24", tmp_path))
    assert problems["60"].answer == "204" and "Aya" in problems["60"].prompt
    assert problems["67"].answer == "25" and problems["67"].metadata["raw_answer"] == "025"
    assert problems["67"].metadata["url"].endswith("Problem_8")


def test_it_fetches_aime25_with_the_bare_problem_as_prompt(tmp_path):
    fetch("aime25", tmp_path)
    problems = load_benchmark("aime25", tmp_path)
    assert [(problem.problem_id, problem.answer) for problem in problems] == [("0", "70"), ("1", "588")]
    assert problems[0].prompt == AIME25_ROWS[0]["problem"]


def test_it_fetches_amc23_with_integral_float_answers(tmp_path):
    fetch("amc23", tmp_path)
    problems = load_benchmark("amc23", tmp_path)
    assert [(problem.problem_id, problem.answer) for problem in problems] == [("0", "27"), ("1", "-1")]
    assert problems[0].prompt.startswith("Cities") and problems[0].metadata["raw_answer"] == 27.0


def test_it_fetches_math500_keyed_by_unique_id(tmp_path):
    fetch("math500", tmp_path)
    first, second = load_benchmark("math500", tmp_path)
    assert first.problem_id == "test/precalculus/807.json"
    assert first.answer == "\\left( 3, \\frac{\\pi}{2} \\right)" and first.metadata["difficulty"] == 2
    assert second.metadata["subject"] == "Prealgebra"


def test_it_fetches_gsm8k_with_the_final_answer(tmp_path):
    fetch("gsm8k", tmp_path)
    problems = load_benchmark("gsm8k", tmp_path)
    assert [(problem.problem_id, problem.answer) for problem in problems] == [("0", "18"), ("1", "1600")]
    assert problems[0].prompt.startswith("Janet")


def test_it_fetches_humaneval_as_gzip_whose_check_passes(tmp_path):
    (path,) = fetch("humaneval", tmp_path)
    assert path.name == "HumanEval.jsonl.gz" and gzip.decompress(path.read_bytes()).startswith(b'{"task_id"')
    (problem,) = load_benchmark("humaneval", tmp_path)
    (test_case,) = problem.test_cases
    assert problem.problem_id == "HumanEval/0" and test_case["entry_point"] == "add"
    run_functional(problem.prompt + problem.metadata["canonical_solution"], test_case)
    with pytest.raises(AssertionError):
        run_functional(problem.prompt + "    return a - b\n", test_case)


@pytest.mark.parametrize("date_type", [str, datetime])  # Arrow's JSON reader may turn contest_date into a timestamp
def test_it_fetches_the_livecodebench_window_with_public_tests(tmp_path, date_type):
    hub_rows = {"livecodebench/code_generation_lite": livecodebench_rows(date_type)}
    written = fetch("livecodebench", tmp_path, load_dataset=FakeHub(hub_rows, as_dataset=date_type is str))
    assert [path.name for path in written] == ["livecodebench_v5.jsonl", "livecodebench_public_tests.json"]
    problems = load_livecodebench(tmp_path)
    assert [problem.problem_id for problem in problems] == ["abc365_b", "3676"]  # 2024-08-01 <= date < 2025-02-01
    atcoder, leetcode = problems
    assert atcoder.prompt == livecodebench_prompt(ATCODER_STATEMENT, "")
    assert atcoder.test_cases == [{"kind": "stdin", "input": "3\n1 2 3\n", "output": "6\n"}]
    assert atcoder.metadata["source"] == "atcoder" and atcoder.metadata["contest_date"] == "2024-08-03T00:00:00"
    assert atcoder.metadata["global_id"] == 1 and atcoder.metadata["test_set"] == "public"
    assert leetcode.metadata["source"] == "leetcode" and "class Solution" in leetcode.prompt
    right = "class Solution:\n    def smallestNumber(self, n):\n        return (1 << n.bit_length()) - 1\n"
    for test_case in leetcode.test_cases:
        assert test_case["entry_point"] == "Solution().smallestNumber"
        run_functional(right, test_case)
    assert all(b"eJzLSM3J" not in path.read_bytes() for path in written)  # private tests are not fetched


@pytest.mark.skipif(not (SHARED_DATA_DIR / "livecodebench").is_dir(), reason="shared datasets absent")
def test_the_livecodebench_prompt_matches_the_shared_slice():
    listings = [json.loads(line) for line in (SHARED_DATA_DIR / "livecodebench" / "livecodebench_v5.jsonl").open()]
    public = json.loads((SHARED_DATA_DIR / "livecodebench" / "livecodebench_public_tests.json").read_text())
    assert len(listings) == len(public) == 279
    assert all(listing["prompt"] == livecodebench_prompt(record["problem"], record["starter_code"])
               for listing, record in zip(listings, public))


def test_it_fetches_mathvista_annotations_and_images(tmp_path):
    written = fetch("mathvista", tmp_path)
    folder = tmp_path / "mathvista"
    assert set(written) == {folder / "images" / "1.jpg", folder / "images" / "5.jpg", folder / "testmini.json"}
    problems = by_id(load_benchmark("mathvista", tmp_path))
    assert images_available(problems.values())
    require_images(problems.values())
    first, multiple_choice = problems["1"], problems["5"]
    assert first.image == folder / "images" / "1.jpg" and first.precision == 1 and first.answer == "1.2"
    assert first.choices is None and first.answer_type == "float" and first.metadata["source"] == "SciBench"
    assert multiple_choice.choices == ["97", "102", "107", "122"] and multiple_choice.precision is None
    assert multiple_choice.metadata["question_type"] == "multi_choice"
    for problem in problems.values():
        with Image.open(problem.image) as image:
            assert image.format == "JPEG" and image.size == (4, 3)


def test_mathvista_jpeg_bytes_from_the_hub_are_kept_unchanged(tmp_path):
    buffer = io.BytesIO()
    tiny_image("RGB").save(buffer, format="JPEG", quality=50)
    rows = [{**mathvista_rows()[0], "decoded_image": {"bytes": buffer.getvalue(), "path": "1.jpg"}}]
    fetch("mathvista", tmp_path, load_dataset=FakeHub({"AI4Math/MathVista": rows}, as_dataset=False))
    assert (tmp_path / "mathvista" / "images" / "1.jpg").read_bytes() == buffer.getvalue()


@pytest.mark.parametrize("error", [ConnectionError("Couldn't reach 'openai/gsm8k' on the Hub (OfflineModeIsEnabled)"),
                                   TimeoutError("timed out")])
def test_an_unreachable_hub_names_the_benchmark_hub_id_and_local_file_and_writes_nothing(tmp_path, error):
    def unreachable(*args, **kwargs):
        raise error

    with pytest.raises(HubUnavailable) as raised:
        fetch_benchmark("gsm8k", tmp_path / "datasets", load_dataset=unreachable)
    message = str(raised.value)
    assert "'gsm8k'" in message and "openai/gsm8k" in message
    assert str(tmp_path / "datasets" / "gsm8k" / "test.jsonl") in message
    assert isinstance(raised.value, DatasetMissing)
    assert files_under(tmp_path) == []


def test_an_offline_hub_error_from_huggingface_hub_is_recognised(tmp_path):
    from huggingface_hub.errors import OfflineModeIsEnabled

    def offline(*args, **kwargs):
        raise OfflineModeIsEnabled("offline mode is enabled")

    with pytest.raises(HubUnavailable, match=re.escape("images/<pid>.jpg")):
        fetch_benchmark("mathvista", tmp_path, load_dataset=offline)
    assert files_under(tmp_path) == []


def test_a_dataset_the_hub_serves_but_cannot_load_is_a_dataset_error(tmp_path):
    def bad_split(*args, **kwargs):
        raise ValueError('Unknown split "testmini". Should be one of [\'test\'].')

    with pytest.raises(DatasetError, match=r"cannot read benchmark 'mathvista' .*AI4Math/MathVista.*Unknown split"):
        fetch_benchmark("mathvista", tmp_path, load_dataset=bad_split)
    assert files_under(tmp_path) == []


def test_it_refuses_to_overwrite_unless_asked(tmp_path):
    fetch("gsm8k", tmp_path)
    path = tmp_path / "gsm8k" / "test.jsonl"
    path.write_text('{"question": "local edit", "answer": "#### 1"}\n')
    with pytest.raises(BenchmarkFilesExist, match=re.escape(str(path))):
        fetch("gsm8k", tmp_path)
    assert path.read_text().startswith('{"question": "local edit"')
    assert fetch("gsm8k", tmp_path, overwrite=True) == [path]
    assert load_benchmark("gsm8k", tmp_path)[0].prompt.startswith("Janet")
    assert files_under(tmp_path) == [path]  # no staging folder left behind


def test_it_refuses_an_existing_image_before_writing_anything(tmp_path):
    image = tmp_path / "mathvista" / "images" / "5.jpg"
    image.parent.mkdir(parents=True)
    image.write_bytes(b"local image")
    with pytest.raises(BenchmarkFilesExist, match="5.jpg"):
        fetch("mathvista", tmp_path)
    assert files_under(tmp_path) == [image] and image.read_bytes() == b"local image"


def test_a_record_without_a_field_names_the_row_and_writes_nothing(tmp_path):
    rows = [GSM8K_ROWS[0], {"question": "no answer here"}]
    with pytest.raises(DatasetError, match=r"openai/gsm8k row 1: field 'answer' is missing"):
        fetch("gsm8k", tmp_path, load_dataset=FakeHub({"openai/gsm8k": rows}, as_dataset=False))
    assert files_under(tmp_path) == []


def test_records_the_loader_refuses_are_not_installed(tmp_path):
    rows = [{**GSM8K_ROWS[0], "answer": "an answer without the final-answer marker"}]
    with pytest.raises(DatasetError, match="do not load .*'####' final answer.*nothing was written"):
        fetch("gsm8k", tmp_path, load_dataset=FakeHub({"openai/gsm8k": rows}))
    assert files_under(tmp_path) == []


def test_a_failed_rename_puts_every_file_back(tmp_path, monkeypatch):
    fetch("livecodebench", tmp_path)
    before = {path: path.read_bytes() for path in files_under(tmp_path)}
    real_replace = os.replace

    def failing_replace(source, target):  # installing the second staged file fails; restoring backups works
        if Path(source).name == "livecodebench_public_tests.json" and ".fetch-" in str(source):
            raise OSError("disk full")
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", failing_replace)
    rows = {"livecodebench/code_generation_lite": livecodebench_rows()[2:3]}  # a different problem list
    with pytest.raises(OSError, match="disk full"):
        fetch("livecodebench", tmp_path, load_dataset=FakeHub(rows), overwrite=True)
    assert {path: path.read_bytes() for path in files_under(tmp_path)} == before


def test_load_benchmark_fetches_missing_files_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "hub_load_dataset", FakeHub())
    with pytest.raises(DatasetMissing):
        load_benchmark("math500", tmp_path)
    problems = load_benchmark("math500", tmp_path, limit=1, fetch_missing=True)
    assert [problem.problem_id for problem in problems] == ["test/precalculus/807.json"]
    assert load_benchmark("math500", tmp_path, fetch_missing=True) == load_benchmark("math500", tmp_path)


def test_the_cli_fetches_and_prints_what_it_wrote(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(hub, "hub_load_dataset", FakeHub())
    assert cli.main(["fetch", "aime24", "mathvista", "--data-dir", str(tmp_path)]) == 0
    output = capsys.readouterr().out
    assert f"aime24: wrote 1 file(s): {tmp_path / 'aime24' / 'test.jsonl'}" in output
    assert "mathvista: wrote 3 file(s)" in output
    assert cli.main(["fetch", "aime24", "--data-dir", str(tmp_path)]) == 1
    assert "already exist" in capsys.readouterr().err
    assert cli.main(["fetch", "aime24", "--overwrite", "--data-dir", str(tmp_path)]) == 0


def test_the_cli_fails_with_a_clear_error_when_the_hub_is_unreachable(tmp_path, monkeypatch, capsys):
    def unreachable(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'HuggingFaceH4/MATH-500' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(hub, "hub_load_dataset", unreachable)
    assert cli.main(["fetch", "math500", "--data-dir", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert "error: cannot fetch benchmark 'math500'" in error and "HuggingFaceH4/MATH-500" in error
    assert str(tmp_path / "math500" / "test.jsonl") in error and "failed: math500" in error
    assert files_under(tmp_path) == []


def test_the_cli_lists_missing_files(tmp_path, capsys):
    assert cli.main(["list", "--data-dir", str(tmp_path)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(lines) == set(HUB_SOURCES)
    assert "HuggingFaceH4/aime_2024" in lines["aime24"] and "missing: aime24/test.jsonl" in lines["aime24"]


@pytest.mark.skipif(not SHARED_DATA_DIR.is_dir(), reason=f"shared datasets folder {SHARED_DATA_DIR} is absent")
def test_the_cli_lists_the_shared_datasets(capsys):
    assert cli.main(["list", "--data-dir", str(SHARED_DATA_DIR)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    for name, source in HUB_SOURCES.items():
        assert source.dataset_id in lines[name]
    assert all(lines[name].endswith("present") for name in HUB_SOURCES if name != "mathvista")
    assert lines["mathvista"].endswith("annotations present, 0 of 1000 images")
