"""An evaluation of the tiny model on a suite, run by a real Celery worker, writes result and sample rows."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.benchmarks import SYNTHETIC_SEED
from training.tasks.arithmetic import generate
from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun, SampleResult
from webapp.evals.services import launch_evaluation
from webapp.jobs import JobStatus
from tests.workers.conftest import SHARED_DATASETS, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def finished(eval_run: EvalRun) -> str:
    eval_run.refresh_from_db()
    return eval_run.status if eval_run.is_terminal else ""


def test_the_worker_evaluates_the_tiny_model_on_a_suite(celery_worker_process, project, alice, api_for):
    benchmarks = [{"benchmark": "synthetic-arithmetic", "limit": 6, "samples_per_problem": 2, "max_tokens": 12,
                   "temperature": 1.0}]
    if SHARED_DATASETS.is_dir():
        benchmarks.append({"benchmark": "aime24", "limit": 2, "max_tokens": 8})
    suite = BenchmarkSuite.objects.create(project=project, name="smoke", benchmarks=benchmarks)
    eval_run = launch_evaluation(project=project, suite=suite, model="tiny", owner=alice)
    assert wait_for(lambda: finished(eval_run), 240, "the evaluation to finish") == JobStatus.SUCCEEDED, \
        eval_run.traceback

    result = BenchmarkResult.objects.get(eval_run=eval_run, benchmark="synthetic-arithmetic")
    samples = list(SampleResult.objects.filter(eval_run=eval_run, benchmark="synthetic-arithmetic"))
    assert (result.num_problems, result.samples_per_problem, len(samples)) == (6, 2, 12)
    assert result.score == pytest.approx(sum(sample.correct for sample in samples) / 12)
    assert result.mean_response_tokens == pytest.approx(sum(sample.response_tokens for sample in samples) / 12)
    assert all(0 < sample.response_tokens <= 12 for sample in samples)
    assert all(sample.truncated == (sample.response_tokens == 12) for sample in samples)
    answers = {problem.problem_id: problem.answer for problem in generate(6, seed=SYNTHETIC_SEED, split="held_out")}
    assert {sample.problem_id for sample in samples} == set(answers)
    assert all(sample.correct == (sample.extracted_answer == answers[sample.problem_id]) for sample in samples)
    assert set(result.metrics) >= {"pass@1", "maj@2", "runner"}
    if SHARED_DATASETS.is_dir():
        assert SampleResult.objects.filter(eval_run=eval_run, benchmark="aime24").count() == 2
    assert eval_run.progress == 1.0 and "synthetic-arithmetic: score" in eval_run.log

    table = api_for(alice).get(f"/api/benchmark-tables/?evaluations={eval_run.pk}&format=csv")
    assert table.status_code == 200, table.content
    header, row = list(csv.reader(io.StringIO(table.content.decode())))
    assert header[:3] == ["evaluation", "model", "synthetic-arithmetic score"]
    assert row[:3] == [str(eval_run.pk), "tiny", f"{round(result.score * 100, 1):.1f}"]


def test_an_unknown_model_fails_with_its_name(celery_worker_process, project, alice):
    suite = BenchmarkSuite.objects.create(project=project, name="one", benchmarks=[
        {"benchmark": "synthetic-arithmetic", "limit": 2}])
    eval_run = launch_evaluation(project=project, suite=suite, model="/nowhere/model", owner=alice)
    assert wait_for(lambda: finished(eval_run), 120, "the evaluation to fail") == JobStatus.FAILED
    assert "/nowhere/model" in eval_run.error
    assert not SampleResult.objects.filter(eval_run=eval_run).exists()
