"""Benchmark loaders read the shared datasets into BenchmarkProblem lists and fail with clear errors."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from common.registry import UnknownEntry
from evaluation.benchmarks import LOADERS, load_benchmark
from evaluation.datasets import (
    BenchmarkProblem,
    DatasetError,
    DatasetMissing,
    ImagesMissing,
    images_available,
    load_aime24,
    load_mathvista,
    require_images,
)
from evaluation.suite_config import BENCHMARKS
from tests.evaluation.functional_cases import run_functional

DATA_DIR = Path(__file__).parents[2].parent / "shared" / "datasets"

if not DATA_DIR.is_dir():
    pytest.skip(f"shared datasets folder {DATA_DIR} is absent", allow_module_level=True)


def load(name: str, limit: int | None = None) -> list[BenchmarkProblem]:
    return load_benchmark(name, DATA_DIR, limit)


def by_id(problems: list[BenchmarkProblem]) -> dict[str, BenchmarkProblem]:
    return {problem.problem_id: problem for problem in problems}


def test_every_loader_is_a_suite_benchmark():
    assert set(LOADERS) <= set(BENCHMARKS)


def test_it_loads_aime24_with_integer_answers_and_keeps_the_raw_answer():
    problems = load("aime24")
    assert len(problems) == 30
    assert len(by_id(problems)) == 30
    first = by_id(problems)["60"]  # 2024 AIME I problem 1 (Aya's walk)
    assert first.answer == "204" and "Aya" in first.prompt
    padded = by_id(problems)["67"]  # 2024 AIME I problem 8, stored as "025"
    assert padded.answer == "25" and padded.metadata["raw_answer"] == "025"
    assert all(problem.answer == str(int(problem.answer)) for problem in problems)


def test_it_loads_aime25_without_the_instruction_suffix():
    problems = load("aime25")
    assert len(problems) == 30
    assert problems[0].answer == "70" and problems[0].prompt.endswith("divisor of $97_b.$")
    assert not any("boxed" in problem.prompt for problem in problems)


def test_it_loads_amc23_with_integral_float_answers_as_integers():
    problems = load("amc23")
    assert len(problems) == 40
    assert problems[0].answer == "27" and problems[0].metadata["raw_answer"] == 27.0
    assert "-1" in {problem.answer for problem in problems}


def test_it_loads_math500_with_latex_answers():
    problems = load("math500")
    assert len(problems) == 500 and len(by_id(problems)) == 500
    assert problems[0].problem_id == "test/precalculus/807.json"
    assert problems[0].answer == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert {problem.metadata["difficulty"] for problem in problems} == {1, 2, 3, 4, 5}


def test_it_loads_gsm8k_with_the_final_answer_without_commas():
    problems = load("gsm8k")
    assert len(problems) == 1319
    assert problems[0].answer == "18" and problems[0].prompt.startswith("Janet")
    assert not any("," in problem.answer or "####" in problem.answer for problem in problems)


def test_it_loads_livecodebench_with_public_tests_only():
    problems = load("livecodebench")
    assert len(problems) == 279 and len(by_id(problems)) == 279
    assert all(problem.test_cases and problem.metadata["test_set"] == "public" for problem in problems)
    assert all(problem.answer == "" for problem in problems)
    assert sum(len(problem.test_cases) for problem in problems) == 736
    kinds = [test["kind"] for problem in problems for test in problem.test_cases]
    assert kinds.count("stdin") == 474 and kinds.count("functional") == 262
    dates = sorted(problem.metadata["contest_date"] for problem in problems)
    assert dates[0].startswith("2024-08-03") and dates[-1].startswith("2025-01-04")


def test_livecodebench_stdin_tests_carry_input_and_output():
    first = by_id(load("livecodebench"))["abc365_b"]
    assert first.test_cases[0] == {"kind": "stdin", "input": "4\n8 2 5 1\n", "output": "3\n"}
    assert first.metadata["source"] == "atcoder" and "Standard Input" in first.prompt


def test_livecodebench_functional_tests_check_a_leetcode_solution():
    problem = by_id(load("livecodebench"))["3676"]  # smallest all-ones binary number >= n
    assert problem.metadata["source"] == "leetcode" and "class Solution" in problem.prompt
    right = "class Solution:\n    def smallestNumber(self, n):\n        return (1 << n.bit_length()) - 1\n"
    wrong = "class Solution:\n    def smallestNumber(self, n):\n        return n\n"
    for test_case in problem.test_cases:
        assert test_case["entry_point"] == "Solution().smallestNumber"
        run_functional(right, test_case)
    with pytest.raises(AssertionError):
        run_functional(wrong, problem.test_cases[0])  # n = 5 -> 7


def test_it_loads_humaneval_whose_canonical_solutions_pass_their_checks():
    problems = load("humaneval")
    assert len(problems) == 164 and problems[0].problem_id == "HumanEval/0"
    assert problems[0].test_cases[0]["entry_point"] == "has_close_elements"
    for problem in problems:
        (test_case,) = problem.test_cases
        assert test_case["kind"] == "functional" and f"def {test_case['entry_point']}" in problem.prompt
        run_functional(problem.prompt + problem.metadata["canonical_solution"], test_case)


def test_it_loads_mathvista_annotations_without_images():
    problems = load("mathvista")
    assert len(problems) == 1000 and len(by_id(problems)) == 1000
    multiple_choice = [problem for problem in problems if problem.metadata["question_type"] == "multi_choice"]
    assert len(multiple_choice) == 540
    assert all(problem.choices and problem.answer in problem.choices for problem in multiple_choice)
    assert all(problem.choices is None for problem in problems if problem not in multiple_choice)
    first = by_id(problems)["1"]
    assert (first.answer, first.answer_type, first.precision, first.image) == ("1.2", "float", 1, None)
    assert not images_available(problems)
    with pytest.raises(ImagesMissing, match=r"1000 of 1000 images are missing .*mathvista/images"):
        require_images(problems)


def test_mathvista_uses_images_that_are_present(tmp_path):
    annotations = json.loads((DATA_DIR / "mathvista" / "testmini.json").read_text())
    folder = tmp_path / "mathvista"
    (folder / "images").mkdir(parents=True)
    (folder / "testmini.json").write_text(json.dumps({"1": annotations["1"], "2": annotations["2"]}))
    (folder / "images" / "1.jpg").write_bytes(b"\xff\xd8\xff")
    problems = load_mathvista(tmp_path)
    assert problems[0].image == folder / "images" / "1.jpg" and problems[1].image is None
    with pytest.raises(ImagesMissing, match="1 of 2 images are missing"):
        require_images(problems)
    (folder / "images" / "2.jpg").write_bytes(b"\xff\xd8\xff")
    assert images_available(load_mathvista(tmp_path))
    assert images_available(load("aime24", limit=2))  # benchmarks without images need none


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_limit_keeps_the_first_problems(name):
    everything = load(name, limit=None)
    assert load(name, limit=3) == everything[:3]
    assert load(name, limit=0) == []


def test_it_rejects_a_negative_limit():
    with pytest.raises(ValueError, match="limit"):
        load("aime24", limit=-1)


def test_it_rejects_an_unknown_benchmark():
    with pytest.raises(UnknownEntry, match="aime24"):
        load_benchmark("aime23", DATA_DIR)


def test_problems_are_frozen():
    problem = load("aime24", limit=1)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.answer = "0"


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_missing_file_raises_dataset_missing_naming_the_path(tmp_path, name):
    with pytest.raises(DatasetMissing, match=re.escape(str(tmp_path / name))):
        load_benchmark(name, tmp_path)


def write_aime24(data_dir: Path, lines: list[str]) -> Path:
    path = data_dir / "aime24" / "test.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return path


GOOD_AIME_LINE = json.dumps({"id": 1, "problem": "What is 5 * 5?", "answer": "025"})


def test_a_malformed_jsonl_line_raises_dataset_error_naming_the_line(tmp_path):
    path = write_aime24(tmp_path, [GOOD_AIME_LINE, '{"id": 2, "problem": '])
    with pytest.raises(DatasetError, match=re.escape(f"{path} line 2: not valid JSON")):
        load_benchmark("aime24", tmp_path)
    assert load_aime24(tmp_path, limit=1)[0].answer == "25"  # lines after the limit are not read


def test_a_record_without_a_field_raises_dataset_error_naming_line_and_field(tmp_path):
    path = write_aime24(tmp_path, ["", GOOD_AIME_LINE, json.dumps({"id": 2, "problem": "?"})])
    with pytest.raises(DatasetError, match=re.escape(f"{path} line 3: field 'answer' is missing")):
        load_benchmark("aime24", tmp_path)


def test_a_non_integer_aime_answer_raises_dataset_error(tmp_path):
    write_aime24(tmp_path, [json.dumps({"id": 1, "problem": "?", "answer": "1/2"})])
    with pytest.raises(DatasetError, match="line 1: AIME answer must be an integer"):
        load_benchmark("aime24", tmp_path)


def test_a_malformed_json_file_raises_dataset_error_naming_the_line(tmp_path):
    (tmp_path / "mathvista").mkdir()
    (tmp_path / "mathvista" / "testmini.json").write_text('{\n  "1": {\n    "pid": 1,\n  }\n}\n')
    with pytest.raises(DatasetError, match="testmini.json line 4"):
        load_benchmark("mathvista", tmp_path)


def test_a_bad_mathvista_record_names_its_pid(tmp_path):
    record = json.loads((DATA_DIR / "mathvista" / "testmini.json").read_text())["5"]
    del record["choices"]
    (tmp_path / "mathvista").mkdir()
    (tmp_path / "mathvista" / "testmini.json").write_text(json.dumps({"5": record}))
    with pytest.raises(DatasetError, match="record '5': field 'choices' is missing"):
        load_benchmark("mathvista", tmp_path)


def test_a_livecodebench_test_of_unknown_type_raises_dataset_error(tmp_path):
    folder = tmp_path / "livecodebench"
    shutil.copytree(DATA_DIR / "livecodebench", folder)
    public = json.loads((folder / "livecodebench_public_tests.json").read_text())
    public[3]["tests"][1]["testtype"] = "interactive"
    (folder / "livecodebench_public_tests.json").write_text(json.dumps(public))
    with pytest.raises(DatasetError, match="record 3, test 1: unknown testtype 'interactive'"):
        load_benchmark("livecodebench", tmp_path)


def test_a_livecodebench_problem_dated_outside_the_window_is_refused(tmp_path):
    """A replaced file must not change the benchmark silently: an older problem is refused by its line."""
    folder = tmp_path / "livecodebench"
    shutil.copytree(DATA_DIR / "livecodebench", folder)
    lines = (folder / "livecodebench_v5.jsonl").read_text().splitlines()
    record = json.loads(lines[2])
    record["contest_date"] = "2023-05-06T00:00:00"
    lines[2] = json.dumps(record)
    (folder / "livecodebench_v5.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match="line 3.*contest_date 2023-05-06 lies outside the benchmark's window "
                                           "2024-08-01 .. 2025-02-01"):
        load_benchmark("livecodebench", tmp_path)
    record["contest_date"] = "2024/09/01"  # within the window as text, but no ISO date
    lines[2] = json.dumps(record)
    (folder / "livecodebench_v5.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match="line 3.*contest_date .2024/09/01. is not an ISO date"):
        load_benchmark("livecodebench", tmp_path)


def test_a_corrupt_gzip_file_raises_dataset_error(tmp_path):
    (tmp_path / "humaneval").mkdir()
    (tmp_path / "humaneval" / "HumanEval.jsonl.gz").write_bytes(b"not gzip data\n")
    with pytest.raises(DatasetError, match="HumanEval.jsonl.gz: not a readable gzip file"):
        load_benchmark("humaneval", tmp_path)
