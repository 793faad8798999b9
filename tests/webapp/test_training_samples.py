"""The worker stores each iteration's sample reports as TrainingSample rows, with its metric row."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from training.types import IterationReport, SampleReport
from webapp.runs.models import IterationMetric, RLRun, TrainingSample
from workers.rl_job import record_iteration, run_rl_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(run):
    """The run as its worker holds it: a worker records only while it holds the run's claim."""
    RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    return run


def sample(index: int, response: str = "4", tokens: int = 12, correct: bool = True) -> SampleReport:
    return SampleReport(prompt_id="17", problem="What is 2+2?", sample_index=index, response=response,
                        reward=1.0 if correct else -0.5, correct=correct, response_tokens=tokens, truncated=False,
                        repeated=index == 2)


def report(iteration: int, samples: tuple[SampleReport, ...]) -> IterationReport:
    return IterationReport(iteration=iteration, train_accuracy=0.5, mean_response_length=12.0,
                           p95_response_length=20.0, loss=0.1, kl=0.0, tokens_generated=48, tokens_reused=0,
                           seconds=2.0, samples=samples)


def stored(run) -> list[tuple]:
    return list(TrainingSample.objects.filter(run=run).order_by("iteration", "sample_index").values_list(
        "iteration", "prompt_id", "problem", "sample_index", "response", "reward", "correct", "response_tokens",
        "truncated", "repeated"))


def test_it_stores_the_iterations_samples_beside_its_metrics(run):
    record_iteration(run, report(1, (sample(0), sample(1, "5", 30, correct=False), sample(2))))
    assert stored(run) == [
        (1, "17", "What is 2+2?", 0, "4", 1.0, True, 12, False, False),
        (1, "17", "What is 2+2?", 1, "5", -0.5, False, 30, False, False),
        (1, "17", "What is 2+2?", 2, "4", 1.0, True, 12, False, True),
    ]
    assert IterationMetric.objects.get(run=run).iteration == 1
    assert RLRun.objects.get(pk=run.pk).current_iteration == 1


def test_it_makes_nul_characters_storable(run):
    record_iteration(run, report(1, (sample(0, "a\x00b"),)))
    assert TrainingSample.objects.get(run=run).response == "a\ufffdb"


def test_a_repeated_iteration_replaces_its_samples(run):
    record_iteration(run, report(1, (sample(0), sample(1))))
    record_iteration(run, report(2, (sample(0),)))
    record_iteration(run, report(1, (sample(0, "again"),)))  # a resumed run repeats iteration 1
    assert [(row[0], row[4]) for row in stored(run)] == [(1, "again"), (2, "4")]


def test_a_refused_sample_stores_nothing_of_the_iteration(run):
    with pytest.raises(IntegrityError):
        record_iteration(run, report(1, (sample(0), sample(1, tokens=-1))))
    assert not IterationMetric.objects.filter(run=run).exists()
    assert not TrainingSample.objects.filter(run=run).exists()


def test_a_noop_run_writes_synthetic_samples_every_iteration(run, settings, tmp_path):
    settings.CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    run.config = {**run.config, "batch_size": 2, "samples_per_problem": 3, "stored_samples_per_iteration": 4}
    run_rl_job(run)
    counts = {iteration: TrainingSample.objects.filter(run=run, iteration=iteration).count() for iteration in (1, 2, 3)}
    assert counts == {1: 4, 2: 4, 3: 4}
    prompt_ids = {str(pk) for pk in run.prompt_set.prompts.values_list("pk", flat=True)}
    assert set(TrainingSample.objects.filter(run=run).values_list("prompt_id", flat=True)) <= prompt_ids
