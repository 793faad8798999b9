"""Dataset imports keep the values a researcher wrote: text stays text, float32 answers keep their decimals."""

from __future__ import annotations

import pytest

from common.prompt_files import PromptFileError, parse_record
from evaluation.datasets.prompt_import import PromptImportConfig, PromptImportError, load_prompts


def imported(path, **columns):
    return load_prompts(PromptImportConfig(dataset_id=str(path), **columns))


def test_a_local_csv_is_read_as_text_as_an_upload_is(tmp_path):
    path = tmp_path / "problems.csv"
    path.write_text("problem,answer,difficulty\nA?,025,1\nB?,3.50,\nC?,NA,3\nD?,1e3,2\n", encoding="utf-8-sig")
    prompts = imported(path, difficulty_column="difficulty")
    assert [(prompt.answer, prompt.difficulty) for prompt in prompts] == [
        ("025", "1"), ("3.50", ""), ("NA", "3"), ("1e3", "2")]  # pandas read 25, 3.5, a missing answer, 1000.0


def test_a_float32_answer_column_keeps_its_decimals(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "problems.parquet"
    pq.write_table(pa.table({"problem": ["x?", "y?"], "answer": pa.array([0.1, 2.5], type=pa.float32())}), path)
    assert [prompt.answer for prompt in imported(path)] == ["0.1", "2.5"]  # was 0.10000000149011612


def test_an_empty_jsonl_file_is_refused_saying_so(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(PromptImportError, match="holds no rows"):
        imported(path)


def test_an_error_on_a_nested_field_names_its_column(tmp_path):
    path = tmp_path / "problems.csv"
    path.write_text("q,a,rate\nA?,1,2.5\n")
    with pytest.raises(PromptImportError, match=r"row 0: .*pass_rate.*\(pass_rate <- column 'rate'\)"):
        imported(path, problem_column="q", answer_column="a", pass_rate_column="rate")


def test_a_problem_keeps_its_own_spacing_and_other_fields_are_trimmed():
    stub = 'def add(a, b):\n    """Add two numbers."""\n'  # a completion continues after the final newline
    prompt = parse_record({"problem": stub, "answer": " 3 ", "domain": " code "}, line=1)
    assert (prompt.problem, prompt.answer, prompt.domain) == (stub, "3", "code")
    with pytest.raises(PromptFileError, match="'problem' is missing or empty"):
        parse_record({"problem": "  \n", "answer": "1"}, line=1)


def test_a_lone_surrogate_is_refused_naming_the_field():
    with pytest.raises(PromptFileError, match="line 4: 'problem' holds a lone surrogate"):
        parse_record({"problem": "a\ud800", "answer": "1"}, line=4)
