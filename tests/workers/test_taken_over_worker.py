"""A worker whose row was taken over (recovery re-queued it, another worker claimed it) records nothing: no
iteration, checkpoint, evaluation, benchmark result, long2short record or prompt set, no log line or heartbeat
on the new owner's row, and no checkpoint file."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.long2short import long2short_methods
from training.long2short.base import Long2ShortOutcome
from training.types import CheckpointReport, IterationReport
from webapp.evals.models import BenchmarkResult, EvalRun, SampleResult
from webapp.jobs import Job, JobStatus, JobTakenOver
from webapp.long2short.models import Long2ShortRecord, Long2ShortVariant
from webapp.prompts.models import PromptSet, PromptSetImport
from webapp.runs.models import Checkpoint, IterationMetric, RLRun, TrainingSample
from workers.jobs import execute_job
from workers.long2short_job import run_long2short_job
from workers.rl_job import run_rl_job

pytestmark = pytest.mark.django_db(transaction=True)

NEW_OWNER = "other-host:42"
STATES_AFTER_TAKEOVER: list[tuple] = []  # the row as the new owner left it, right after each take_over


@pytest.fixture(autouse=True)
def _forget_takeovers():
    STATES_AFTER_TAKEOVER.clear()


def new_owners_state(model: type[Job], pk: int) -> tuple:
    return model.objects.filter(pk=pk).values_list("status", "worker", "heartbeat_at", "log", "progress").get()


def take_over(model: type[Job], pk: int) -> None:
    """What happens while the first worker is frozen: recovery re-queues the row, another worker claims it."""
    model.objects.filter(pk=pk).update(status=JobStatus.QUEUED, worker="")
    assert model.claim(pk, NEW_OWNER)
    STATES_AFTER_TAKEOVER.append(new_owners_state(model, pk))


def test_a_taken_over_noop_run_records_no_iteration(run, monkeypatch, settings, tmp_path):
    from training.backends import noop_test

    settings.CHECKPOINT_DIR = str(tmp_path / "checkpoints")

    class FrozenClock:
        @staticmethod
        def sleep(seconds):  # the first iteration's work: the worker freezes and loses its row meanwhile
            if not STATES_AFTER_TAKEOVER:
                take_over(RLRun, run.pk)

    monkeypatch.setattr(noop_test, "time", FrozenClock)
    assert execute_job("rl_run", run.pk, run_rl_job) == "taken over"
    assert not IterationMetric.objects.filter(run=run).exists() and not TrainingSample.objects.filter(run=run).exists()
    assert RLRun.objects.get(pk=run.pk).current_iteration == 0
    assert new_owners_state(RLRun, run.pk) == STATES_AFTER_TAKEOVER[0]  # no heartbeat, log line or progress from it


def test_a_taken_over_torch_loop_saves_no_checkpoint_after_its_iteration(run, monkeypatch, settings, tmp_path):
    """training/loop.py checks should_stop only before an iteration: the hook recording it stops the loop."""
    from training import loop

    settings.CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    RLRun.objects.filter(pk=run.pk).update(config={**run.config, "trainer_backend": "torch",
                                                   "checkpoint_every_iterations": 1})
    saved = []

    class FakeSession:
        next_iteration = 1

        def save(self, iteration):  # the main rank writes the checkpoint's files here
            saved.append(iteration)
            return CheckpointReport(iteration, tmp_path / f"iteration-{iteration}", 1)

        def close(self):
            pass

    def frozen_iteration(session, iteration):
        take_over(RLRun, run.pk)
        return IterationReport(iteration=iteration, train_accuracy=0.5, mean_response_length=3.0,
                               p95_response_length=4.0, loss=0.1, kl=0.0, tokens_generated=6, tokens_reused=0,
                               seconds=0.1)

    monkeypatch.setattr(loop, "start_session", lambda config, records, paths, hooks: FakeSession())
    monkeypatch.setattr(loop, "run_iteration", frozen_iteration)
    assert execute_job("rl_run", run.pk, run_rl_job) == "taken over"
    assert saved == [] and not IterationMetric.objects.filter(run=run).exists()
    assert not Checkpoint.objects.filter(run=run).exists()


def test_a_taken_over_run_records_no_checkpoint_and_queues_no_evaluation(run, suite, settings, tmp_path):
    from common.knobs import parse_config
    from training.config import RLConfig
    from workers.rl_job import record_checkpoint

    RLRun.objects.filter(pk=run.pk).update(evaluation_suite=suite)
    assert RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    take_over(RLRun, run.pk)
    config = parse_config(RLConfig, {"iterations": 2, "evaluate_every_iterations": 1})
    with pytest.raises(JobTakenOver):
        record_checkpoint(run, config, CheckpointReport(2, tmp_path / "c2", 10))
    assert not Checkpoint.objects.filter(run=run).exists() and not EvalRun.objects.exists()


def test_a_progress_line_of_a_taken_over_worker_is_refused_and_keeps_the_new_owners_heartbeat(run):
    assert RLRun.claim(run.pk, "worker-a")
    take_over(RLRun, run.pk)
    before = new_owners_state(RLRun, run.pk)
    with pytest.raises(JobTakenOver):
        RLRun.log_alive(run.pk, "iteration 7 of 40", "worker-a")
    assert new_owners_state(RLRun, run.pk) == before
    RLRun.log_alive(run.pk, "iteration 1 of 40", NEW_OWNER)  # the new owner's own line goes in
    assert RLRun.objects.get(pk=run.pk).log.endswith("iteration 1 of 40\n")


def test_a_taken_over_evaluation_stores_no_benchmark_result(project, suite, alice):
    from evaluation.outcome import BenchmarkOutcome, SampleOutcome
    from evaluation.scoring import BenchmarkScore
    from workers.eval_job import store_outcome

    eval_run = EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice)
    assert EvalRun.claim(eval_run.pk, "worker-a")
    eval_run.refresh_from_db()
    take_over(EvalRun, eval_run.pk)
    outcome = BenchmarkOutcome(
        benchmark="math500", score=BenchmarkScore(score=1.0, ci_low=1.0, ci_high=1.0, mean_response_tokens=3.0,
                                                  num_problems=1, samples_per_problem=1, metrics={}),
        samples=[SampleOutcome(problem_id="p1", sample_index=0, response="4", response_tokens=3, truncated=False,
                               correct=True)])
    with pytest.raises(JobTakenOver):
        store_outcome(eval_run, outcome, progress=1.0)
    assert not BenchmarkResult.objects.exists() and not SampleResult.objects.exists()
    assert EvalRun.objects.get(pk=eval_run.pk).progress == 0.0


@pytest.fixture
def variant(run, settings, tmp_path):
    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.SUCCEEDED)
    Checkpoint.objects.create(project=run.project, run=run, iteration=3, path=str(tmp_path / "c3"))
    return Long2ShortVariant.objects.create(project=run.project, name="v", method="dpo", parent_run=run,
                                            owner=run.owner)


def method_that_loses_its_row(config, job, hooks):
    """Loses the row while it trains, then returns its outcome: the records must not be written."""
    take_over(Long2ShortVariant, Long2ShortVariant.objects.get().pk)
    return Long2ShortOutcome(checkpoint_path=Path(job.output_dir) / "checkpoint", size_bytes=1)


def method_that_reports_after_losing_its_row(config, job, hooks):
    """Loses the row, then reports progress before saving: the hook stops it before the save."""
    take_over(Long2ShortVariant, Long2ShortVariant.objects.get().pk)
    hooks.progress(0.9)
    (Path(job.output_dir) / "checkpoint").mkdir()
    raise AssertionError("the progress hook of a taken-over worker must stop the method")


@pytest.mark.parametrize("method", ["method_that_loses_its_row", "method_that_reports_after_losing_its_row"])
def test_a_taken_over_variant_records_nothing(variant, suite, monkeypatch, method):
    from webapp.path_policy import variant_checkpoint_folder

    Long2ShortVariant.objects.filter(pk=variant.pk).update(evaluation_suite=suite)
    monkeypatch.setitem(long2short_methods.entries, "dpo", f"{__name__}:{method}")
    assert execute_job("long2short", variant.pk, run_long2short_job) == "taken over"
    assert not Long2ShortRecord.objects.exists() and not Checkpoint.objects.filter(variant=variant).exists()
    assert not EvalRun.objects.exists() and not (variant_checkpoint_folder(variant.pk) / "checkpoint").exists()
    assert new_owners_state(Long2ShortVariant, variant.pk) == STATES_AFTER_TAKEOVER[0]


def test_a_taken_over_dataset_import_creates_no_prompt_set(project, alice):
    from common.prompt_files import ParsedPrompt
    from webapp.prompts.services import complete_prompt_import

    job = PromptSetImport.objects.create(project=project, owner=alice, name="imported", config={})
    assert PromptSetImport.claim(job.pk, "worker-a")
    job.refresh_from_db()
    take_over(PromptSetImport, job.pk)
    with pytest.raises(JobTakenOver):
        complete_prompt_import(job, [ParsedPrompt(line=1, problem="What is 1+1?", answer="2")], "a dataset")
    assert not PromptSet.objects.filter(name="imported").exists()
    assert PromptSetImport.objects.get(pk=job.pk).prompt_set_id is None


def test_a_worker_that_still_holds_its_row_records_as_before(run, settings, tmp_path):
    settings.CHECKPOINT_DIR = str(tmp_path / "checkpoints")
    assert execute_job("rl_run", run.pk, run_rl_job) == JobStatus.SUCCEEDED
    assert list(IterationMetric.objects.filter(run=run).values_list("iteration", flat=True)) == [1, 2, 3]
    assert RLRun.objects.get(pk=run.pk).current_iteration == 3
