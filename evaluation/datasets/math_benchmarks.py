"""Math benchmarks with a single reference answer: AIME 2024/2025, AMC 2023, MATH-500, GSM8K."""

from __future__ import annotations

import re
from pathlib import Path

from evaluation.datasets.files import field_of, read_jsonl
from evaluation.datasets.problems import BenchmarkProblem, DatasetError

# AIME 2025's prompts end with this instruction; prompts here are the bare problem text.
BOXED_INSTRUCTION = "\nPlease reason step by step, and put your final answer within \\boxed{}."
AIME_ANSWER = re.compile(r"\d{1,3}")


def aime_answer(raw: str | int, location: str) -> str:
    """An AIME answer (an integer 0-999, maybe zero-padded) as a plain integer string: "025" -> "25"."""
    text = str(raw).strip()
    if isinstance(raw, bool) or not AIME_ANSWER.fullmatch(text):
        raise DatasetError(f"{location}: AIME answer must be an integer 0-999, got {raw!r}")
    return str(int(text))


def load_aime24(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """AIME 2024 I+II (30 problems); answers normalised to integers, the raw string kept."""
    problems = []
    for location, record in read_jsonl(Path(data_dir) / "aime24" / "test.jsonl", limit):
        raw_answer = field_of(record, "answer", (str, int), location)
        problems.append(BenchmarkProblem(
            problem_id=str(field_of(record, "id", (int, str), location)),
            prompt=field_of(record, "problem", str, location),
            answer=aime_answer(raw_answer, location),
            metadata={"source": "AIME 2024", "raw_answer": raw_answer,
                      "url": record.get("url"), "solution": record.get("solution")},
        ))
    return problems


def load_aime25(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """AIME 2025 I+II (30 problems, no ids: problem_id is the 0-based position)."""
    problems = []
    for index, (location, record) in enumerate(read_jsonl(Path(data_dir) / "aime25" / "aime25.jsonl", limit)):
        prompt = field_of(record, "prompt", str, location)
        raw_answer = field_of(record, "answer", (int, str), location)
        metadata = {"source": "AIME 2025", "raw_answer": raw_answer}
        if prompt.endswith(BOXED_INSTRUCTION):
            prompt = prompt[: -len(BOXED_INSTRUCTION)]
            metadata["removed_instruction"] = BOXED_INSTRUCTION.strip()
        problems.append(BenchmarkProblem(problem_id=str(index), prompt=prompt,
                                         answer=aime_answer(raw_answer, location), metadata=metadata))
    return problems


def number_answer(raw: int | float | str, location: str) -> str:
    """A numeric answer as text, integral floats without ".0": 27.0 -> "27"."""
    if isinstance(raw, bool):
        raise DatasetError(f"{location}: answer must be a number, got {raw!r}")
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    return str(raw).strip()


def load_amc23(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """AMC 2023 (40 problems); answers stored as floats in the file ("27.0" -> "27")."""
    problems = []
    for location, record in read_jsonl(Path(data_dir) / "amc23" / "test.jsonl", limit):
        raw_answer = field_of(record, "answer", (int, float, str), location)
        problems.append(BenchmarkProblem(
            problem_id=str(field_of(record, "id", (int, str), location)),
            prompt=field_of(record, "problem", str, location),
            answer=number_answer(raw_answer, location),
            metadata={"source": "AMC 2023", "raw_answer": raw_answer, "url": record.get("url")},
        ))
    return problems


def load_math500(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """MATH-500 (OpenAI's PRM800K split); answers are LaTeX strings, difficulty is the level 1-5."""
    problems = []
    for location, record in read_jsonl(Path(data_dir) / "math500" / "test.jsonl", limit):
        level = field_of(record, "level", int, location)
        problems.append(BenchmarkProblem(
            problem_id=field_of(record, "unique_id", str, location),
            prompt=field_of(record, "problem", str, location),
            answer=field_of(record, "answer", str, location),
            metadata={"source": "MATH", "subject": field_of(record, "subject", str, location),
                      "difficulty": level, "solution": record.get("solution")},
        ))
    return problems


def gsm8k_answer(solution: str, location: str) -> str:
    """The final answer after "####", commas removed: "... #### 1,600" -> "1600"."""
    if "####" not in solution:
        raise DatasetError(f"{location}: field 'answer' has no '####' final answer")
    return solution.rsplit("####", 1)[1].strip().replace(",", "")


def load_gsm8k(data_dir: Path, limit: int | None = None) -> list[BenchmarkProblem]:
    """GSM8K test (1319 problems, no ids: problem_id is the 0-based position)."""
    problems = []
    for index, (location, record) in enumerate(read_jsonl(Path(data_dir) / "gsm8k" / "test.jsonl", limit)):
        solution = field_of(record, "answer", str, location)
        problems.append(BenchmarkProblem(
            problem_id=str(index),
            prompt=field_of(record, "question", str, location),
            answer=gsm8k_answer(solution, location),
            metadata={"source": "GSM8K", "solution": solution},
        ))
    return problems
