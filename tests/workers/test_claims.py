"""Claiming rows: one winner, abandoned rows re-claimed, cancelled rows never."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.jobs import JobStatus
from webapp.runs.models import RLRun
from workers.jobs import execute_job

pytestmark = pytest.mark.django_db


def test_only_the_first_claim_of_a_queued_row_wins(run):
    assert RLRun.claim(run.pk, "worker-a") is True
    assert RLRun.claim(run.pk, "worker-b") is False
    run.refresh_from_db()
    assert (run.status, run.worker) == (JobStatus.RUNNING, "worker-a")


def test_a_running_row_with_a_stale_heartbeat_is_reclaimed(run, settings):
    settings.JOB_STALE_AFTER_SECONDS = 60
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, heartbeat_at=timezone.now())
    assert RLRun.claim(run.pk, "worker-b") is False
    RLRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    assert RLRun.claim(run.pk, "worker-b") is True


def test_a_cancelled_row_is_never_claimed(run):
    run.request_cancel()
    assert RLRun.claim(run.pk, "worker-a") is False


def test_execute_job_records_success_and_failure_on_the_row(run):
    assert execute_job("rl_run", run.pk, lambda row: None) == JobStatus.SUCCEEDED
    run.refresh_from_db()
    assert (run.status, run.progress) == (JobStatus.SUCCEEDED, 1.0)

    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.QUEUED)

    def explode(row):
        raise RuntimeError("out of memory on rank 0")

    assert execute_job("rl_run", run.pk, explode) == JobStatus.FAILED
    run.refresh_from_db()
    assert run.error == "RuntimeError: out of memory on rank 0" and "explode" in run.traceback


def test_checkpoints_queue_evaluations_on_the_run_suite_at_the_cadence(run, suite, settings):
    from pathlib import Path

    from common.knobs import parse_config
    from training.config import RLConfig
    from training.types import CheckpointReport
    from webapp.evals.models import EvalRun
    from workers.rl_job import record_checkpoint

    RLRun.objects.filter(pk=run.pk).update(evaluation_suite=suite)
    RLRun.claim(run.pk, "worker-a")  # the worker records checkpoints while it holds the run
    run.refresh_from_db()
    config = parse_config(RLConfig, {"iterations": 6, "evaluate_every_iterations": 4, "checkpoint_every_iterations": 2})
    for iteration in (0, 2, 4, 6):
        record_checkpoint(run, config, CheckpointReport(iteration, Path(f"/tmp/c{iteration}"), 10))
    evaluated = sorted(EvalRun.objects.filter(suite=suite).values_list("checkpoint__iteration", flat=True))
    assert evaluated == [0, 4, 6]
    assert all(e.status == JobStatus.QUEUED for e in EvalRun.objects.all())


def test_the_terminal_status_and_its_log_line_arrive_together(run):
    assert RLRun.claim(run.pk, "worker-a")
    assert RLRun.finish(run.pk, JobStatus.SUCCEEDED, log_line="succeeded")
    run.refresh_from_db()
    assert run.status == JobStatus.SUCCEEDED and run.log.endswith(" succeeded\n") and run.progress == 1.0
    assert not RLRun.finish(run.pk, JobStatus.FAILED, log_line="failed: late")  # no longer running: untouched
    run.refresh_from_db()
    assert run.status == JobStatus.SUCCEEDED and "late" not in run.log


def test_a_progress_line_is_a_heartbeat_and_a_cancel_request_is_seen(run):
    stale = timezone.now() - timedelta(hours=1)
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, worker="worker-a", heartbeat_at=stale)
    RLRun.log_alive(run.pk, "iteration 3 of 40", "worker-a")
    run.refresh_from_db()
    assert run.log.endswith("iteration 3 of 40\n") and run.heartbeat_at > stale
    assert RLRun.cancel_was_requested(run.pk) is False
    run.request_cancel()
    assert RLRun.cancel_was_requested(run.pk) is True
