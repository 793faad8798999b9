"""Code benchmarks graded by tests: the LiveCodeBench slice (public tests) and HumanEval."""

from __future__ import annotations

import datetime
import re
from pathlib import Path
from typing import Any

from evaluation.datasets.files import check_limit, field_of, read_json, read_jsonl
from evaluation.datasets.problems import BenchmarkProblem, DatasetError
from grading.programs import stub_task_check

LEETCODE_METHOD = re.compile(r"^\s+def (\w+)\(self\b", re.MULTILINE)
QUESTION_MARKER = "Question: "

# check(candidate) for one LeetCode-style test: input lines are JSON arguments, output is JSON.
FUNCTIONAL_CHECK = '''import json


def check(candidate):
    arguments = [json.loads(line) for line in {input!r}.split("\\n")]
    expected = json.loads({output!r})
    result = candidate(*arguments)
    if isinstance(result, tuple):
        result = list(result)
    assert result == expected, "expected " + repr(expected) + ", got " + repr(result)
'''


def contest_platform(contest_id: str) -> str:
    """Where an LCB problem comes from, read off its contest id: "abc365" -> "atcoder"."""
    if contest_id.startswith(("weekly-contest", "biweekly-contest")):
        return "leetcode"
    if re.match(r"a[brg]c\d", contest_id):
        return "atcoder"
    return "other"


def leetcode_entry_point(starter_code: str, location: str) -> str:
    """The callable of a LeetCode "class Solution" stub: "Solution().methodName"."""
    methods = LEETCODE_METHOD.findall(starter_code)
    if "class Solution" not in starter_code or len(methods) != 1:
        raise DatasetError(f"{location}: functional tests need a starter_code with class Solution "
                           f"and exactly one method, found {methods or 'none'}")
    return f"Solution().{methods[0]}"


def livecodebench_test(test: Any, entry_point: str | None, location: str) -> dict[str, str]:
    """One public test as a test case: stdin/stdout, or a functional check(candidate)."""
    test_input = field_of(test, "input", str, location)
    test_output = field_of(test, "output", str, location)
    test_type = field_of(test, "testtype", str, location)
    if test_type == "stdin":
        return {"kind": "stdin", "input": test_input, "output": test_output}
    if test_type == "functional" and entry_point is not None:
        return {"kind": "functional", "entry_point": entry_point, "input": test_input, "output": test_output,
                "code": FUNCTIONAL_CHECK.format(input=test_input, output=test_output)}
    raise DatasetError(f"{location}: unknown testtype {test_type!r} (expected 'stdin' or 'functional')")


def livecodebench_problem(location: str, listing: dict[str, Any], public: Any) -> BenchmarkProblem:
    """Join a problem of livecodebench_v5.jsonl with its record of livecodebench_public_tests.json."""
    prompt = field_of(listing, "prompt", str, location)
    statement = field_of(public, "problem", str, location)
    starter_code = field_of(public, "starter_code", str, location)
    if not prompt.partition(QUESTION_MARKER)[2].startswith(statement):
        raise DatasetError(f"{location}: the public-tests record at the same position is another problem; "
                           f"the two LiveCodeBench files must list the same problems in the same order")
    tests = field_of(public, "tests", list, location)
    if not tests:
        raise DatasetError(f"{location}: no public tests")
    needs_entry_point = any(isinstance(test, dict) and test.get("testtype") == "functional" for test in tests)
    entry_point = leetcode_entry_point(starter_code, location) if needs_entry_point else None
    contest_id = field_of(listing, "contest_id", str, location)
    return BenchmarkProblem(
        problem_id=str(field_of(listing, "question_id", (str, int), location)),
        prompt=prompt,
        test_cases=[livecodebench_test(test, entry_point, f"{location}, test {index}")
                    for index, test in enumerate(tests)],
        metadata={"source": contest_platform(contest_id), "contest_id": contest_id,
                  "contest_date": field_of(listing, "contest_date", str, location),
                  "global_id": listing.get("global_id"), "test_set": "public",
                  "statement": statement, "starter_code": starter_code},
    )


# The shared LiveCodeBench slice: release_v5 problems dated 2024-08-01 .. 2025-01-31 (279 problems).
LIVECODEBENCH_WINDOW = ("2024-08-01", "2025-02-01")  # [start, end) on contest_date


def check_in_window(problem: BenchmarkProblem, location: str) -> BenchmarkProblem:
    """Refuse a problem dated outside LIVECODEBENCH_WINDOW: a replaced file would silently change the benchmark
    (and could hold problems older than a model's training data cut-off)."""
    start, end = LIVECODEBENCH_WINDOW
    written = problem.metadata["contest_date"]
    try:
        date = datetime.date.fromisoformat(written[:10]).isoformat()
    except ValueError:
        raise DatasetError(f"{location}: contest_date {written!r} is not an ISO date (YYYY-MM-DD...)") from None
    if not start <= date < end:
        raise DatasetError(f"{location}: contest_date {date} lies outside the benchmark's window {start} .. {end} "
                           "(exclusive): restore livecodebench_v5.jsonl from the shared slice or fetch it again")
    return problem


def load_livecodebench(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """The LiveCodeBench v5 slice (279 problems, 2024-08..2025-01) with its PUBLIC tests only; a problem dated
    outside the window is refused.

    prompt is the full LCB generation prompt (statement, starter code, format instructions).
    """
    check_limit(limit)
    folder = Path(data_dir) / "livecodebench"
    listings = list(read_jsonl(folder / "livecodebench_v5.jsonl"))
    public_path = folder / "livecodebench_public_tests.json"
    public_records = read_json(public_path)
    if not isinstance(public_records, list) or len(public_records) != len(listings):
        found = len(public_records) if isinstance(public_records, list) else type(public_records).__name__
        raise DatasetError(f"{public_path}: expected a list of {len(listings)} records "
                           f"(one per line of livecodebench_v5.jsonl), found {found}")
    pairs = list(zip(listings, public_records))[:limit]
    problems = []
    for index, ((location, listing), public) in enumerate(pairs):
        where = f"{location} / {public_path.name} record {index}"
        problems.append(check_in_window(livecodebench_problem(where, listing, public), where))
    return problems


def load_humaneval(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """HumanEval (164 problems); one functional test case: the check(candidate) function, after the prompt.

    The prompt comes first in the check's code, so helpers the check calls (encode_cyclic, poly, ...) are the
    prompt's own: looked up among the solution's globals, a solution could redefine them and pass with a
    wrong answer (the original harness has that hole)."""
    problems = []
    for location, record in read_jsonl(Path(data_dir) / "humaneval" / "HumanEval.jsonl.gz", limit):
        entry_point = field_of(record, "entry_point", str, location)
        check_code = field_of(record, "test", str, location)
        if "def check(candidate)" not in check_code:
            raise DatasetError(f"{location}: field 'test' does not define check(candidate)")
        problems.append(BenchmarkProblem(
            problem_id=field_of(record, "task_id", str, location),
            prompt=field_of(record, "prompt", str, location),
            test_cases=[{"kind": "functional", "entry_point": entry_point, "code": stub_task_check(
                field_of(record, "prompt", str, location), check_code, entry_point)}],
            metadata={"source": "HumanEval", "entry_point": entry_point,
                      "canonical_solution": record.get("canonical_solution")},
        ))
    return problems
