"""A real worker claims queued jobs, runs them to a terminal state and never runs one twice."""

from __future__ import annotations

import pytest

from common.knobs import config_to_dict, parse_config
from training.config import RLConfig
from webapp.jobs import JobStatus
from webapp.prompts.models import PromptSet
from webapp.runs.models import IterationMetric, RLRun
from webapp.runs.services import launch_run
from tests.workers.conftest import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def queue_noop_run(project, prompt_set, owner, **knobs) -> RLRun:
    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test", **knobs}))
    return launch_run(project=project, name="noop", prompt_set=prompt_set, owner=owner, config=config)


def status_of(run: RLRun) -> str:
    run.refresh_from_db()
    return run.status if run.is_terminal else ""


def test_the_worker_runs_a_queued_run_to_success(celery_worker_process, project, prompt_set, alice):
    run = queue_noop_run(project, prompt_set, alice, iterations=4)
    assert wait_for(lambda: status_of(run), 60, "the run to finish") == JobStatus.SUCCEEDED, run.traceback
    assert list(IterationMetric.objects.filter(run=run).values_list("iteration", flat=True)) == [1, 2, 3, 4]
    assert (run.current_iteration, run.progress) == (4, 1.0)
    assert run.worker and run.started_at <= run.finished_at
    assert "started on" in run.log and "succeeded" in run.log


def test_a_second_claim_of_the_same_row_is_refused(celery_worker_process, project, prompt_set, alice):
    from webapp.celery import app

    run = queue_noop_run(project, prompt_set, alice, iterations=2)
    wait_for(lambda: status_of(run), 60, "the run to finish")
    assert RLRun.claim(run.pk, "another-worker") is False
    again = app.send_task("mirrorlab.run_rl", args=[run.pk], queue="gpu")
    assert again.get(timeout=30) == "not claimed"
    assert IterationMetric.objects.filter(run=run).count() == 2


def test_a_failure_is_recorded_with_its_traceback(celery_worker_process, project, alice):
    empty = PromptSet.objects.create(project=project, name="empty")
    run = queue_noop_run(project, empty, alice, iterations=2)
    assert wait_for(lambda: status_of(run), 60, "the run to fail") == JobStatus.FAILED
    assert run.error == "ValueError: the prompt set is empty: add prompts before launching a run"
    assert "Traceback (most recent call last)" in run.traceback and "noop_test.py" in run.traceback


def test_a_running_job_stops_between_iterations_when_cancelled(celery_worker_process, project, prompt_set, alice):
    run = queue_noop_run(project, prompt_set, alice, iterations=2000)
    wait_for(lambda: IterationMetric.objects.filter(run=run).count() >= 3, 60, "a few iterations")
    assert run.request_cancel() == "cancel requested"
    assert wait_for(lambda: status_of(run), 60, "the run to stop") == JobStatus.CANCELLED
    done = IterationMetric.objects.filter(run=run).count()
    assert 3 <= done < 2000 and run.current_iteration == done


def test_a_run_abandoned_by_a_dead_worker_is_requeued_by_the_periodic_recovery_and_finished(
        celery_worker_process, project, prompt_set, alice, settings):
    """The worker is already running; nothing but its periodic recovery pass notices the silent run."""
    from datetime import timedelta

    from django.utils import timezone

    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test", "iterations": 3}))
    silent_for = timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS + 1)  # just past the default threshold
    first_start = timezone.now() - silent_for
    run = RLRun.objects.create(project=project, name="orphan", prompt_set=prompt_set, owner=alice, config=config,
                               total_iterations=3, status=JobStatus.RUNNING, worker="dead-host:1",
                               started_at=first_start, heartbeat_at=first_start)
    assert wait_for(lambda: status_of(run), 60, "the re-queued run to finish") == JobStatus.SUCCEEDED
    assert run.worker != "dead-host:1" and "worker dead-host:1 lost" in run.log and "re-queued" in run.log
    assert run.started_at == first_start  # the first start is kept


def test_a_dead_workers_run_with_a_pending_cancel_is_finished_as_cancelled(celery_worker_process, project,
                                                                          prompt_set, alice, settings):
    from datetime import timedelta

    from django.utils import timezone

    config = config_to_dict(parse_config(RLConfig, {"trainer_backend": "noop-test", "iterations": 3}))
    silent_for = timedelta(seconds=settings.JOB_STALE_AFTER_SECONDS + 1)
    run = RLRun.objects.create(project=project, name="cancelled orphan", prompt_set=prompt_set, owner=alice,
                               config=config, total_iterations=3, status=JobStatus.RUNNING, worker="dead-host:2",
                               cancel_requested=True, heartbeat_at=timezone.now() - silent_for)
    assert wait_for(lambda: status_of(run), 30, "the orphan to be finished") == JobStatus.CANCELLED
    assert "cancelled as requested" in run.log and not IterationMetric.objects.filter(run=run).exists()


def test_the_worker_trains_a_real_run_on_the_tiny_model(celery_worker_process, project, prompt_set, alice):
    from webapp.runs.models import Checkpoint

    run = launch_run(project=project, name="tiny", prompt_set=prompt_set, owner=alice, config=config_to_dict(
        parse_config(RLConfig, {"iterations": 2, "batch_size": 2, "samples_per_problem": 2, "max_response_tokens": 8,
                                "checkpoint_every_iterations": 1})))
    assert wait_for(lambda: status_of(run), 180, "the tiny run to finish") == JobStatus.SUCCEEDED, run.traceback
    metrics = list(IterationMetric.objects.filter(run=run).order_by("iteration"))
    assert [m.iteration for m in metrics] == [1, 2]
    assert all(m.tokens_generated > 0 and m.mean_response_length <= 8 for m in metrics)
    checkpoints = Checkpoint.objects.filter(run=run).order_by("iteration")
    assert [c.iteration for c in checkpoints] == [1, 2]
    assert all(c.size_bytes > 1_000_000 and c.path.endswith(f"iteration-{c.iteration:06d}") for c in checkpoints)
