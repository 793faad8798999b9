"""Prompt sets imported from a local dataset (the offline stand-in for a hub id): by a real Celery worker
on the cpu queue, and in-process through the same job function."""

from __future__ import annotations

import json

import pytest

from common.knobs import config_to_dict, parse_config
from evaluation.datasets.prompt_import import PromptImportConfig
from tests.workers.conftest import wait_for
from webapp.jobs import JobStatus
from webapp.prompts.models import PromptSet, PromptSetImport
from webapp.prompts.services import launch_prompt_import
from workers.jobs import execute_job
from workers.prompt_import_job import run_prompt_import_job

ROWS = [
    {"question": "What is 2+3?", "solution": "5", "level": "easy", "labels": ["arithmetic", "small"], "rate": 0.9,
     "topic": "math", "unused": 1},
    {"question": "What is 12*12?", "solution": 144, "level": "medium", "labels": [], "rate": 0.4, "topic": "math",
     "unused": 2},
    {"question": "Reverse the input line.", "solution": None, "level": "hard", "labels": ["strings"], "rate": None,
     "topic": "code", "unused": 3, "tests": [{"input": "abc\n", "output": "cba\n"}]},
]
MAPPING = {"problem_column": "question", "answer_column": "solution", "difficulty_column": "level",
           "tags_column": "labels", "pass_rate_column": "rate", "domain_column": "topic",
           "test_cases_column": "tests"}


def write_jsonl(folder, rows) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(folder)


def queue_import(project, user, dataset_id: str, name: str = "imported", **settings) -> PromptSetImport:
    config = config_to_dict(parse_config(PromptImportConfig, {"dataset_id": dataset_id, **settings}))
    return launch_prompt_import(project=project, name=name, config=config, owner=user)


def prompt_values(prompt_set) -> list[tuple]:
    return list(prompt_set.prompts.order_by("position").values_list(
        "position", "problem", "answer", "test_cases", "domain", "difficulty", "tags", "pass_rate"))


def finished(job: PromptSetImport) -> str:
    job.refresh_from_db()
    return job.status if job.is_terminal else ""


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_worker_imports_a_local_dataset_applying_the_mapping(celery_worker_process, project, alice, tmp_path):
    job = queue_import(project, alice, write_jsonl(tmp_path / "dataset", ROWS), **MAPPING)
    assert wait_for(lambda: finished(job), 120, "the import to finish") == JobStatus.SUCCEEDED, job.error
    prompt_set = PromptSet.objects.get(project=project, name="imported")
    assert job.prompt_set == prompt_set and prompt_set.created_by == alice
    assert prompt_set.source == f"{tmp_path / 'dataset'} (split train)"
    assert prompt_values(prompt_set) == [
        (1, "What is 2+3?", "5", None, "math", "easy", ["arithmetic", "small"], 0.9),
        (2, "What is 12*12?", "144", None, "math", "medium", [], 0.4),
        (3, "Reverse the input line.", "", [{"input": "abc\n", "output": "cba\n"}], "code", "hard", ["strings"], None),
    ]
    assert "imported 3 prompts" in job.log and job.progress == 1.0


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_the_worker_refuses_a_bad_row_naming_it_and_creates_nothing(celery_worker_process, project, alice,
                                                                    tmp_path):
    rows = [dict(ROWS[0]), dict(ROWS[1], rate=1.5)]
    job = queue_import(project, alice, write_jsonl(tmp_path / "bad", rows), problem_column="question",
                       answer_column="solution", pass_rate_column="rate")
    assert wait_for(lambda: finished(job), 120, "the import to fail") == JobStatus.FAILED
    assert job.error.endswith("row 1: 'pass_rate' must be between 0 and 1 (pass_rate <- column 'rate')")
    assert not PromptSet.objects.filter(name="imported").exists()
    assert job.prompt_set is None


def run_in_process(job: PromptSetImport) -> PromptSetImport:
    """The worker's task body, without Celery: claim, run, record the outcome."""
    execute_job("prompt_import", job.pk, run_prompt_import_job)
    job.refresh_from_db()
    return job


@pytest.mark.django_db
def test_a_parquet_file_is_read_as_the_chosen_split_up_to_the_row_limit(project, alice, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "problems.parquet"
    pq.write_table(pa.table({"q": ["1+1?", "2+2?", "3+3?"], "a": ["2", "4", "6"]}), path)
    job = run_in_process(queue_import(project, alice, str(path), split="test", limit=2, problem_column="q",
                                      answer_column="a"))
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert [(p, q, a) for p, q, a, *_ in prompt_values(job.prompt_set)] == [(1, "1+1?", "2"), (2, "2+2?", "4")]


@pytest.mark.django_db
def test_a_mapping_naming_a_missing_column_fails_saying_which(project, alice, tmp_path):
    job = run_in_process(queue_import(project, alice, write_jsonl(tmp_path / "ds", ROWS[:2]),
                                      problem_column="question", answer_column="answer", tags_column="labels"))
    assert job.status == JobStatus.FAILED
    assert "answer_column names column 'answer', which" in job.error
    assert "Its columns: question, solution, level, labels, rate, topic, unused" in job.error
    assert not PromptSet.objects.exists()


@pytest.mark.django_db
def test_a_row_without_answer_or_test_cases_is_refused_naming_the_row(project, alice, tmp_path):
    rows = [dict(ROWS[0]), dict(ROWS[1]), dict(ROWS[1], solution="")]
    job = run_in_process(queue_import(project, alice, write_jsonl(tmp_path / "ds", rows),
                                      problem_column="question", answer_column="solution"))
    assert job.status == JobStatus.FAILED
    assert "row 2: needs an 'answer' or 'test_cases' to verify responses (answer <- column 'solution')" in job.error
    assert not PromptSet.objects.exists() and not job.prompt_set


@pytest.mark.django_db
def test_an_import_whose_name_was_taken_meanwhile_fails_and_keeps_the_existing_set(project, alice, tmp_path,
                                                                                   prompt_set):
    job = queue_import(project, alice, write_jsonl(tmp_path / "ds", ROWS[:1]), name="arith",
                       problem_column="question", answer_column="solution")
    job = run_in_process(job)
    assert job.status == JobStatus.FAILED and "already has a prompt set named 'arith'" in job.error
    assert PromptSet.objects.get(name="arith").prompts.count() == 2


@pytest.mark.django_db
def test_an_unreadable_local_dataset_fails_with_its_name(project, alice, tmp_path):
    job = run_in_process(queue_import(project, alice, str(tmp_path / "missing-folder")))
    assert job.status == JobStatus.FAILED
    assert job.error == f"PromptImportError: dataset_id: no folder or file {tmp_path / 'missing-folder'} on this worker"
