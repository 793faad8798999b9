"""Parse JSONL and CSV prompt files into validated rows; a bad line rejects the whole file.

JSON (a JSONL line, a CSV cell of tags or test cases) gets the REST API's checks (common.json_checks): at most
MAX_NESTING levels deep, no NaN or Infinity, no NUL character, each refusal naming the line and the field.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

from common.json_checks import NonFinite, first_bad_value, nesting_depth
from common.test_cases import normalise_test_cases

MAX_NESTING = 64  # levels of arrays and objects in a line or cell (test cases need 3; json recursion fails near 1000)
FIELDS = ("problem", "image", "answer", "test_cases", "domain", "tags", "difficulty", "pass_rate")
MAX_TEXT = {"image": 500, "domain": 100, "difficulty": 50}


class PromptFileError(ValueError):
    """A prompt file was refused; `line` is 1-based, counting the CSV header."""

    def __init__(self, line: int, reason: str):
        self.line = line
        self.reason = reason
        super().__init__(f"line {line}: {reason}")


@dataclass(frozen=True)
class ParsedPrompt:
    line: int
    problem: str
    image: str = ""
    answer: str = ""
    test_cases: Any = None
    domain: str = ""
    tags: tuple[str, ...] = ()
    difficulty: str = ""
    pass_rate: float | None = None


def _loads(text: str) -> Any:
    """Parsed JSON, or ValueError for text that is not JSON or nests deeper than MAX_NESTING (before parsing, so a
    deep line cannot exhaust the recursion limit); NaN and Infinity come back as NonFinite for first_bad_value."""
    depth = nesting_depth(text)
    if depth > MAX_NESTING:
        raise ValueError(f"nested {depth} levels deep; at most {MAX_NESTING}")
    try:
        return json.loads(text, parse_constant=NonFinite)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error.msg} at column {error.colno})") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise ValueError(f"not valid JSON ({error})") from None


def _json_cell(text: str, name: str) -> Any:
    """A CSV cell holding JSON, checked as a JSONL line is; ValueError naming the field."""
    try:
        value = _loads(text)
    except ValueError as error:
        raise ValueError(f"'{name}' is {error}") from None
    if problem := first_bad_value(value, name):
        raise ValueError(problem)
    return value


def _text(record: dict, name: str) -> str:
    """The field as text: numbers written out, surrounding spaces dropped except from the problem, which is kept
    as written (a code stub's final newline is where a completion continues it)."""
    value = record.get(name)
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # numeric answers such as 204
    if not isinstance(value, str):
        raise ValueError(f"'{name}' must be text")
    if name in MAX_TEXT and len(value) > MAX_TEXT[name]:
        raise ValueError(f"'{name}' is longer than {MAX_TEXT[name]} characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"'{name}' holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not "
                         "text that can be stored") from None
    return value if name == "problem" else value.strip()


def _tags(value: Any, text_allowed: bool = True) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str) and not text_allowed:
        example = json.dumps([tag.strip() for tag in re.split("[,;]", value)])
        raise ValueError(f"'tags' must be a JSON list of strings, such as {example}, not the text "
                         f"{json.dumps(value)} (';'-separated text is for CSV files)")
    if isinstance(value, str):
        value = _json_cell(value, "tags") if value.lstrip().startswith("[") else value.split(";")
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise ValueError("'tags' must be a list of strings (or ';'-separated text in CSV)")
    return tuple(tag.strip() for tag in value if tag.strip())


def _test_cases(value: Any) -> Any:
    if value in (None, ""):
        return None
    if isinstance(value, str):
        value = _json_cell(value, "test_cases")
    if not isinstance(value, (list, dict)):
        raise ValueError("'test_cases' must be a JSON list or object")
    normalise_test_cases(value)  # checked here, stored as given
    return value


def _pass_rate(value: Any) -> float | None:
    if value in (None, ""):
        return None
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise ValueError("'pass_rate' must be a number between 0 and 1") from None
    if not 0.0 <= rate <= 1.0:
        raise ValueError("'pass_rate' must be between 0 and 1")
    return rate


def parse_record(record: Any, line: int, text_tags: bool = True) -> ParsedPrompt:
    """Validate one record (a JSON object or a CSV row); text_tags: 'tags' may be ';'-separated text."""
    if not isinstance(record, dict):
        raise PromptFileError(line, "expected an object with a 'problem' field")
    if problem := first_bad_value(record):  # NaN, Infinity or a NUL character, named by its field
        raise PromptFileError(line, problem)
    unknown = sorted(set(record) - set(FIELDS) - {""})
    if unknown:
        raise PromptFileError(line, f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(FIELDS)}")
    try:
        problem = _text(record, "problem")
        if not problem.strip():
            raise ValueError("'problem' is missing or empty")
        test_cases = _test_cases(record.get("test_cases"))
        answer = _text(record, "answer")
        if not answer and test_cases is None:
            raise ValueError("needs an 'answer' or 'test_cases' to verify responses")
        return ParsedPrompt(
            line=line, problem=problem, image=_text(record, "image"), answer=answer, test_cases=test_cases,
            domain=_text(record, "domain"), tags=_tags(record.get("tags"), text_tags),
            difficulty=_text(record, "difficulty"), pass_rate=_pass_rate(record.get("pass_rate")),
        )
    except ValueError as error:
        raise PromptFileError(line, str(error)) from None


def _jsonl_records(text: str) -> Iterator[tuple[int, Any]]:
    """(line number, parsed line); a line ends at a line feed only (a carriage return before it is dropped): raw
    U+2028, U+0085 and other line breaks str.splitlines() splits at may stand inside a JSON string."""
    for number, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")
        if not raw.strip():
            continue
        try:
            yield number, _loads(raw)
        except ValueError as error:
            raise PromptFileError(number, str(error)) from None


def _csv_records(text: str) -> Iterator[tuple[int, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames or "problem" not in reader.fieldnames:
        raise PromptFileError(1, "the CSV header must name a 'problem' column")
    for row in reader:
        if None in row:
            raise PromptFileError(reader.line_num, "more values than header columns")
        yield reader.line_num, row


def parse_prompt_file(content: bytes, file_format: str) -> list[ParsedPrompt]:
    """All prompts of a JSONL or CSV file, or PromptFileError for the first bad line."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = content[: error.start].count(b"\n") + 1
        raise PromptFileError(line, "not UTF-8 text") from None
    readers = {"jsonl": _jsonl_records, "csv": _csv_records}
    if file_format not in readers:
        raise ValueError(f"unknown prompt file format {file_format!r}; use jsonl or csv")
    text_tags = file_format == "csv"  # a JSONL line writes its tags as a JSON list
    prompts = [parse_record(record, line, text_tags) for line, record in readers[file_format](text)]
    if not prompts:
        raise PromptFileError(1, "the file holds no prompts")
    return prompts


def guess_format(filename: str) -> str:
    """jsonl or csv from a file name."""
    lowered = filename.lower()
    if lowered.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if lowered.endswith(".csv"):
        return "csv"
    raise ValueError(f"cannot tell the format of {filename!r}: name it .jsonl or .csv")
