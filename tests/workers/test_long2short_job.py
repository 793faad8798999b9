"""The long2short job in process: records written from a method's outcome, waiting, parents, merge inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.long2short import long2short_methods
from training.long2short.base import KeptSample, Long2ShortOutcome, Long2ShortStopped, PreferencePair
from webapp.evals.models import EvalRun
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortRecord, Long2ShortVariant
from webapp.runs.models import Checkpoint, RLRun
from workers.jobs import execute_job
from workers.long2short_job import parent_wait_seconds, run_long2short_job

pytestmark = pytest.mark.django_db


def fake_dpo(config, job, hooks):
    """A stand-in method: two pairs and a kept sample about the job's first prompts, a folder as checkpoint."""
    first, second = (record.prompt_id for record in job.records[:2])
    hooks.log(f"fake method saw beta {config.beta} and {len(job.records)} prompts")
    hooks.progress(0.5)
    folder = Path(job.output_dir) / "checkpoint"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(b"x" * 123)
    return Long2ShortOutcome(
        checkpoint_path=folder, size_bytes=123, metrics={"pairs": 2.0},
        kept_samples=(KeptSample(first, "5", 1, samples_drawn=8, correct_samples=3),),
        pairs=(PreferencePair(first, "5", "2+3 is 5 so 5\x00", 1, 9, "correct_too_long"),
               PreferencePair(second, "144", "12*12 is 124", 2, 7, "wrong_longer")))


def stopping_method(config, job, hooks):
    Long2ShortVariant.objects.update(cancel_requested=True)
    if hooks.should_stop():
        raise Long2ShortStopped("asked to stop")
    raise AssertionError("should_stop did not see the cancel request")


@pytest.fixture
def finished_run(run, tmp_path, settings):
    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.SUCCEEDED)
    for iteration in (0, 3, 2):
        Checkpoint.objects.create(project=run.project, run=run, iteration=iteration,
                                  path=str(tmp_path / f"c{iteration}"))
    run.refresh_from_db()
    return run


def variant_of(run, method="dpo", **fields) -> Long2ShortVariant:
    return Long2ShortVariant.objects.create(project=run.project, name="v", method=method, parent_run=run,
                                            owner=run.owner, **fields)


def test_the_method_outcome_becomes_records_a_checkpoint_and_a_queued_evaluation(
        finished_run, prompt_set, suite, monkeypatch):
    monkeypatch.setitem(long2short_methods.entries, "dpo", f"{__name__}:fake_dpo")
    variant = variant_of(finished_run, parameters={"beta": 0.3}, evaluation_suite=suite)
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.SUCCEEDED

    first, second = (str(pk) for pk in prompt_set.prompts.order_by("position").values_list("pk", flat=True))
    rows = list(Long2ShortRecord.objects.filter(variant=variant).order_by("id").values(
        "kind", "prompt_id", "problem", "chosen", "chosen_tokens", "rejected", "rejected_tokens", "rejected_reason",
        "extra"))
    assert rows == [
        {"kind": "kept_sample", "prompt_id": first, "problem": "What is 2+3?", "chosen": "5", "chosen_tokens": 1,
         "rejected": "", "rejected_tokens": None, "rejected_reason": "",
         "extra": {"samples_drawn": 8, "correct_samples": 3}},
        {"kind": "pair", "prompt_id": first, "problem": "What is 2+3?", "chosen": "5", "chosen_tokens": 1,
         "rejected": "2+3 is 5 so 5\ufffd", "rejected_tokens": 9, "rejected_reason": "correct_too_long", "extra": {}},
        {"kind": "pair", "prompt_id": second, "problem": "What is 12*12?", "chosen": "144", "chosen_tokens": 2,
         "rejected": "12*12 is 124", "rejected_tokens": 7, "rejected_reason": "wrong_longer", "extra": {}},
    ]
    checkpoint = Checkpoint.objects.get(variant=variant)
    assert (checkpoint.size_bytes, checkpoint.iteration, checkpoint.run_id) == (123, None, None)
    assert checkpoint.path.endswith(f"variant-{variant.pk}/checkpoint")
    evaluation = EvalRun.objects.get(checkpoint=checkpoint)
    assert (evaluation.suite_id, evaluation.status, evaluation.owner_id) == (suite.pk, JobStatus.QUEUED,
                                                                            finished_run.owner_id)
    variant.refresh_from_db()
    assert "fake method saw beta 0.3 and 2 prompts" in variant.log and "metrics: pairs 2" in variant.log
    assert "parent: run-1 @ 3" in variant.log  # the highest iteration, not the newest row
    assert variant.started_from == Checkpoint.objects.get(run=finished_run, iteration=3)  # the dashboard's baseline

    # A second run of the same row (a re-queued job) replaces the rows instead of adding to them.
    Long2ShortVariant.objects.filter(pk=variant.pk).update(status=JobStatus.QUEUED)
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.SUCCEEDED
    assert Long2ShortRecord.objects.filter(variant=variant).count() == 3
    assert Checkpoint.objects.filter(variant=variant).count() == 1
    assert EvalRun.objects.filter(checkpoint__variant=variant).count() == 1


def test_a_method_that_stops_on_request_cancels_the_variant(finished_run, monkeypatch):
    monkeypatch.setitem(long2short_methods.entries, "dpo", f"{__name__}:stopping_method")
    variant = variant_of(finished_run)
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.CANCELLED
    assert not Checkpoint.objects.filter(variant=variant).exists()


def test_a_merge_naming_a_missing_iteration_fails_listing_the_saved_ones(finished_run):
    variant = variant_of(finished_run, method="merge", parameters={"other_run_iterations": "0, 7"})
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.FAILED
    variant.refresh_from_db()
    assert variant.error == (f"ValueError: other_run_iterations: run 'run-1' (#{finished_run.pk}) has no checkpoint "
                             "at iteration 7 (saved: 0, 2, 3)")


def test_a_merge_refuses_a_checkpoint_of_another_project(finished_run, alice):
    from webapp.projects.models import Project

    elsewhere = Project.objects.create(name="Other", slug="other")
    foreign = Checkpoint.objects.create(project=elsewhere, iteration=1, path="/tmp/foreign")
    variant = variant_of(finished_run, method="merge", parameters={"other_checkpoint_ids": f"{foreign.pk}"})
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.FAILED
    variant.refresh_from_db()
    assert variant.error == f"ValueError: other_checkpoint_ids: no checkpoint {foreign.pk} in project 'reasoning'"


def test_a_merge_without_other_models_is_refused(finished_run):
    """The worker's own guard, for a row made without the API or the form (both refuse it at creation)."""
    variant = variant_of(finished_run, method="merge")
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.FAILED
    variant.refresh_from_db()
    assert "give other_checkpoint_ids or other_run_iterations" in variant.error


def test_waits_grow_to_a_minute_and_are_logged_once_while_the_parent_runs(run):
    variant = variant_of(run)
    assert [parent_wait_seconds(variant.pk, waits) for waits in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]
    variant.refresh_from_db()
    assert variant.log.count(f"waiting for run 'run-1' (#{run.pk}, queued) to finish") == 1
    assert variant.status == JobStatus.QUEUED and variant.started_at is None


def test_no_wait_once_the_parent_finished_or_the_variant_was_cancelled(run, tmp_path):
    variant = variant_of(run)
    variant.request_cancel()
    assert parent_wait_seconds(variant.pk, 0) is None

    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.FAILED)
    assert parent_wait_seconds(variant_of(run).pk, 0) is None

    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING)
    checkpoint = Checkpoint.objects.create(project=run.project, run=run, iteration=1, path=str(tmp_path))
    assert parent_wait_seconds(variant_of(run, parent_checkpoint=checkpoint).pk, 0) is None  # a chosen checkpoint


def test_a_variant_of_a_variant_uses_the_source_runs_prompts_and_suite(finished_run, prompt_set, suite, monkeypatch):
    monkeypatch.setitem(long2short_methods.entries, "dpo", f"{__name__}:fake_dpo")
    RLRun.objects.filter(pk=finished_run.pk).update(evaluation_suite=suite)
    first = variant_of(finished_run)
    made = Checkpoint.objects.create(project=finished_run.project, variant=first, path="/tmp/first")
    second = Long2ShortVariant.objects.create(project=finished_run.project, name="v2", method="dpo",
                                              parent_checkpoint=made, owner=finished_run.owner)
    assert execute_job("long2short", second.pk, run_long2short_job) == JobStatus.SUCCEEDED, \
        Long2ShortVariant.objects.get(pk=second.pk).traceback
    assert Long2ShortRecord.objects.filter(variant=second, problem="What is 2+3?").count() == 2
    assert EvalRun.objects.get(checkpoint__variant=second).suite_id == suite.pk


@pytest.fixture
def tiny_parent(run, tiny_model_dir, tmp_path, settings):
    """The run, succeeded, with the untrained tiny model as its last checkpoint and a small torch config."""
    from common.knobs import config_to_dict, parse_config
    from training.checkpoint import save_checkpoint
    from training.config import RLConfig
    from training.models.loading import load_model, load_tokenizer

    settings.CHECKPOINT_DIR = tmp_path / "checkpoints"
    config = config_to_dict(parse_config(RLConfig, {"iterations": 2, "batch_size": 2, "samples_per_problem": 2,
                                                    "max_response_tokens": 16, "micro_batch_size": 4}))
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.SUCCEEDED, config=config)
    report = save_checkpoint(tmp_path / "run", 2, load_model(str(tiny_model_dir)),
                             load_tokenizer(str(tiny_model_dir)), config, {})
    Checkpoint.objects.create(project=run.project, run=run, iteration=2, path=str(report.path))
    run.refresh_from_db()
    return run


def test_long2short_rl_stores_its_last_iteration_checkpoint(tiny_parent, suite):
    variant = variant_of(tiny_parent, method="long2short_rl", evaluation_suite=suite,
                         parameters={"iterations": 1, "max_response_fraction": 0.5})
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.SUCCEEDED, \
        Long2ShortVariant.objects.get(pk=variant.pk).traceback
    checkpoint = Checkpoint.objects.get(variant=variant)
    assert checkpoint.iteration == 1 and (Path(checkpoint.path) / "model.safetensors").is_file()
    assert EvalRun.objects.filter(checkpoint=checkpoint, suite=suite).count() == 1
    variant.refresh_from_db()
    assert "max response tokens 8" in variant.log and variant.progress == 1.0


def test_a_method_refusing_its_data_fails_the_variant_with_its_reason(tiny_parent):
    variant = variant_of(tiny_parent, method="shortest_rejection",
                         parameters={"samples_per_problem": 2, "max_response_tokens": 4})
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.FAILED
    variant.refresh_from_db()
    assert variant.error.startswith("ValueError: no problem had a correct response among its 2 samples")
    assert not Checkpoint.objects.filter(variant=variant).exists() and not variant.records.exists()


def evaluated(run, suite, iteration: int, score: float, tokens: float, status=JobStatus.SUCCEEDED) -> EvalRun:
    from webapp.evals.models import BenchmarkResult

    checkpoint = Checkpoint.objects.get(run=run, iteration=iteration)
    evaluation = EvalRun.objects.create(project=run.project, suite=suite, checkpoint=checkpoint, status=status)
    if status == JobStatus.SUCCEEDED:
        BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=score,
                                       mean_response_tokens=tokens, num_problems=256)
    return evaluation


def test_long2short_rl_starts_from_the_best_balanced_checkpoint_and_says_why(finished_run, suite, monkeypatch):
    monkeypatch.setitem(long2short_methods.entries, "long2short_rl", f"{__name__}:fake_dpo")
    RLRun.objects.filter(pk=finished_run.pk).update(evaluation_suite=suite)
    evaluated(finished_run, suite, 0, 0.30, 12.0)
    evaluated(finished_run, suite, 2, 0.49, 20.0)  # within 2 points of the best, and shorter
    evaluated(finished_run, suite, 3, 0.50, 31.0)
    variant = variant_of(finished_run, method="long2short_rl", parameters={"beta": 0.1}, evaluation_suite=suite)
    monkeypatch.setattr("workers.long2short_job.parse_config", lambda cls, parameters: type("C", (), {"beta": 0.1}))
    assert execute_job("long2short", variant.pk, run_long2short_job) == JobStatus.SUCCEEDED
    variant.refresh_from_db()
    assert variant.started_from == Checkpoint.objects.get(run=finished_run, iteration=2)
    assert variant.start_reason.startswith("best balance: iteration 2 (49.0% at 20.0 tokens): the fewest tokens")
    assert "iteration 3, 50.0% at 31.0 tokens" in variant.start_reason

    pinned = variant_of(finished_run, method="long2short_rl", evaluation_suite=suite,
                        parent_checkpoint=Checkpoint.objects.get(run=finished_run, iteration=3))
    assert execute_job("long2short", pinned.pk, run_long2short_job) == JobStatus.SUCCEEDED
    pinned.refresh_from_db()
    assert (pinned.started_from.iteration, pinned.start_reason) == (3, "the parent checkpoint chosen at launch")


def test_long2short_rl_waits_for_the_parents_checkpoint_evaluations(finished_run, suite):
    pending = evaluated(finished_run, suite, 3, 0.0, 0.0, status=JobStatus.RUNNING)
    assert parent_wait_seconds(variant_of(finished_run, method="long2short_rl").pk, 0) == 1
    assert parent_wait_seconds(variant_of(finished_run, method="dpo").pk, 0) is None  # other methods do not wait
    EvalRun.objects.filter(pk=pending.pk).update(status=JobStatus.FAILED)
    assert parent_wait_seconds(variant_of(finished_run, method="long2short_rl").pk, 0) is None
