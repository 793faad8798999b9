"""Long2short variants run by a real Celery worker: parent resolution, waiting, failure, checkpoint, evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.knobs import config_to_dict, parse_config
from training.config import MergeConfig, RLConfig
from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.services import launch_variant
from webapp.runs.models import Checkpoint, RLRun
from tests.workers.conftest import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

QUICK_SUITE = [{"benchmark": "synthetic-arithmetic", "limit": 2, "samples_per_problem": 1, "max_tokens": 8,
                "temperature": 0.0}]


def status_of(job) -> str:
    job.refresh_from_db()
    return job.status if job.is_terminal else ""


def parent_run(project, prompt_set, owner, status: str, suite=None) -> RLRun:
    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test", "iterations": 3}))
    return RLRun.objects.create(project=project, name="long parent", prompt_set=prompt_set, owner=owner,
                                config=config, total_iterations=3, status=status, evaluation_suite=suite)


def save_run_checkpoint(run: RLRun, iteration: int, model_dir: Path, output_dir: Path, shift: float) -> Path:
    """The tiny model with every floating weight moved by `shift`, saved as the run's checkpoint (file and row)."""
    import torch

    from training.checkpoint import save_checkpoint
    from training.models.loading import load_model, load_tokenizer

    model, tokenizer = load_model(str(model_dir)), load_tokenizer(str(model_dir))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(shift)
    report = save_checkpoint(output_dir, iteration, model, tokenizer, run.config, {})
    Checkpoint.objects.create(project=run.project, run=run, iteration=iteration, path=str(report.path),
                              size_bytes=report.size_bytes)
    return report.path


def first_weight(path: Path, name: str = "model.embed_tokens.weight"):
    from safetensors.torch import load_file

    return load_file(str(Path(path) / "model.safetensors"))[name]


def merge_with_warmup(project, run, owner, **fields) -> Long2ShortVariant:
    parameters = config_to_dict(parse_config(MergeConfig, {"parent_weight": 0.25, "other_run_iterations": "0"}))
    return launch_variant(project=project, name="merged", method="merge", parent_run=run, parameters=parameters,
                          owner=owner, **fields)


def test_a_merge_variant_produces_an_evaluated_checkpoint_of_the_weighted_average(
        celery_worker_process, project, prompt_set, alice, tiny_model_dir, tmp_path):
    from webapp.pages.long2short_data import dashboard_data

    suite = BenchmarkSuite.objects.create(project=project, name="quick", benchmarks=QUICK_SUITE)
    run = parent_run(project, prompt_set, alice, JobStatus.SUCCEEDED, suite=suite)
    warmup = save_run_checkpoint(run, 0, tiny_model_dir, tmp_path / "run", shift=0.0)
    last = save_run_checkpoint(run, 3, tiny_model_dir, tmp_path / "run", shift=0.5)
    variant = merge_with_warmup(project, run, alice)
    assert wait_for(lambda: status_of(variant), 120, "the variant to finish") == JobStatus.SUCCEEDED, \
        variant.traceback

    checkpoint = Checkpoint.objects.get(variant=variant)
    assert (checkpoint.project_id, checkpoint.run_id, checkpoint.iteration) == (project.pk, None, None)
    assert checkpoint.size_bytes > 0 and Path(checkpoint.path).name == "checkpoint"
    expected = 0.25 * first_weight(last) + 0.75 * first_weight(warmup)  # parent = the highest iteration
    assert (first_weight(checkpoint.path) - expected).abs().max().item() < 1e-6
    assert variant.progress == 1.0
    for line in ("merged with", "iteration-000000", "checkpoint saved", "queued evaluation", "succeeded"):
        assert line in variant.log, line

    evaluation = EvalRun.objects.get(checkpoint=checkpoint)
    assert evaluation.suite_id == suite.pk  # the variant names no suite: the parent run's
    assert wait_for(lambda: status_of(evaluation), 120, "the evaluation") == JobStatus.SUCCEEDED, \
        evaluation.traceback
    table = dashboard_data(run)["table"]
    assert [(row["variant"], row["benchmark"]) for row in table] == [(variant.pk, "synthetic-arithmetic")]


def test_a_variant_of_a_running_parent_waits_then_runs(celery_worker_process, project, prompt_set, alice,
                                                       tiny_model_dir, tmp_path):
    from django.utils import timezone

    run = parent_run(project, prompt_set, alice, JobStatus.RUNNING)
    RLRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now(), worker="elsewhere:1")
    variant = merge_with_warmup(project, run, alice)
    wait_for(lambda: "waiting for run 'long parent'" in Long2ShortVariant.objects.get(pk=variant.pk).log, 60,
             "the variant to wait")
    variant.refresh_from_db()
    assert (variant.status, variant.started_at, variant.worker) == (JobStatus.QUEUED, None, "")

    save_run_checkpoint(run, 0, tiny_model_dir, tmp_path / "run", shift=0.0)
    save_run_checkpoint(run, 3, tiny_model_dir, tmp_path / "run", shift=0.5)
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.SUCCEEDED)
    assert wait_for(lambda: status_of(variant), 120, "the variant to run") == JobStatus.SUCCEEDED, variant.traceback
    assert Checkpoint.objects.filter(variant=variant).count() == 1
    assert variant.log.count("waiting for run") == 1  # logged once, not on every retry
    assert not EvalRun.objects.filter(checkpoint__variant=variant).exists()  # no suite anywhere
    assert "not evaluated" in variant.log


def test_a_variant_of_a_failed_parent_fails_with_the_reason(celery_worker_process, project, prompt_set, alice):
    run = parent_run(project, prompt_set, alice, JobStatus.FAILED)
    variant = merge_with_warmup(project, run, alice)
    assert wait_for(lambda: status_of(variant), 60, "the variant to fail") == JobStatus.FAILED
    assert variant.error == (f"ParentUnavailable: parent run 'long parent' (#{run.pk}) failed: a variant needs a "
                             "parent run that succeeded; relaunch the variant from one of the run's checkpoints "
                             "instead")
    assert not Checkpoint.objects.filter(variant=variant).exists()

