"""Every edge of the job state machine (webapp/jobs.py), on real Postgres: each state has a way out."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.jobs import JobStatus, JobTakenOver
from webapp.runs.models import RLRun
from webapp.runs.services import resume_run
from workers.jobs import execute_job, raise_if_cancelled, worker_name

pytestmark = pytest.mark.django_db

LONG_AGO = timedelta(hours=1)


def as_running(run: RLRun, worker: str = "dead-host:1", heartbeat_age: timedelta = LONG_AGO, **fields) -> RLRun:
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, worker=worker,
                                           heartbeat_at=timezone.now() - heartbeat_age, **fields)
    run.refresh_from_db()
    return run


def test_queued_to_running_by_a_claim_which_keeps_the_first_start_and_logs_each_claim(run):
    assert RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    first_start = run.started_at
    RLRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - LONG_AGO)  # worker-a died
    assert RLRun.claim(run.pk, "worker-b")
    run.refresh_from_db()
    assert (run.status, run.worker, run.started_at) == (JobStatus.RUNNING, "worker-b", first_start)
    assert "started on worker-a" in run.log and "started on worker-b" in run.log


def test_queued_to_cancelled_by_a_cancel(run):
    assert run.request_cancel() == "cancelled"
    assert (run.status, run.cancel_requested) == (JobStatus.CANCELLED, True) and run.finished_at


def test_running_to_succeeded_or_failed_by_the_job_function(run):
    assert execute_job("rl_run", run.pk, lambda row: None) == JobStatus.SUCCEEDED
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.QUEUED)

    def crash(row):
        raise MemoryError("CUDA out of memory")

    assert execute_job("rl_run", run.pk, crash) == JobStatus.FAILED
    run.refresh_from_db()
    assert run.error == "MemoryError: CUDA out of memory"


def test_running_to_cancelled_when_the_job_sees_the_request_between_steps(run):
    def steps(row):
        row.request_cancel()
        assert type(row).objects.get(pk=row.pk).status == JobStatus.RUNNING  # its worker is alive: only asked
        raise_if_cancelled(row)

    assert execute_job("rl_run", run.pk, steps) == JobStatus.CANCELLED
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and run.log.endswith("cancelled by request\n")


def test_running_with_a_dead_worker_is_cancelled_at_once(run):
    as_running(run)
    assert run.request_cancel() == "cancelled"
    assert run.status == JobStatus.CANCELLED and "its worker is gone" in run.log


def test_running_with_a_live_worker_is_only_asked_to_cancel(run):
    as_running(run, heartbeat_age=timedelta(seconds=1))
    assert run.request_cancel() == "cancel requested"
    assert run.status == JobStatus.RUNNING and run.cancel_requested


def test_recovery_requeues_a_dead_workers_job_and_leaves_live_ones(run, project, prompt_set, alice):
    live = RLRun.objects.create(project=project, name="live", prompt_set=prompt_set, owner=alice, config=run.config)
    as_running(run)
    as_running(live, worker="live-host:2", heartbeat_age=timedelta(seconds=1))
    sent = []
    assert RLRun.recover_stale(send=sent.append) == [run.pk] and sent == [run.pk]
    run.refresh_from_db()
    live.refresh_from_db()
    assert (run.status, run.worker) == (JobStatus.QUEUED, "") and run.log.rstrip().endswith("re-queued")
    assert "worker dead-host:1 lost" in run.log
    assert (live.status, live.worker) == (JobStatus.RUNNING, "live-host:2")
    assert RLRun.recover_stale(send=sent.append) == [] and sent == [run.pk]  # a second pass moves nothing


def test_recovery_finishes_a_dead_workers_job_with_a_pending_cancel_as_cancelled(run):
    as_running(run, cancel_requested=True)  # the cancel came while the worker was alive, then it died
    assert RLRun.recover_stale(send=pytest.fail) == []
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and run.finished_at and "cancelled as requested" in run.log


def test_a_failed_send_leaves_the_row_running_and_stale_for_the_next_pass(run):
    as_running(run)

    def broker_down(pk):
        raise ConnectionError("broker unreachable")

    with pytest.raises(ConnectionError):
        RLRun.recover_stale(send=broker_down)
    run.refresh_from_db()
    assert (run.status, run.worker) == (JobStatus.RUNNING, "dead-host:1") and "re-queued" not in run.log
    sent = []
    assert RLRun.recover_stale(send=sent.append) == [run.pk] and sent == [run.pk]


@pytest.mark.parametrize("ended", [JobStatus.FAILED, JobStatus.CANCELLED])
def test_failed_and_cancelled_runs_resume_to_queued(run, alice, ended):
    as_running(run, cancel_requested=True)
    RLRun.objects.filter(pk=run.pk).update(status=ended, finished_at=timezone.now())
    assert resume_run(run, alice)
    assert (run.status, run.cancel_requested, run.worker) == (JobStatus.QUEUED, False, "")
    assert RLRun.claim(run.pk, "worker-c")


def test_a_worker_whose_row_was_taken_over_stops_and_records_nothing(run):
    def steps(row):
        # while this worker stalled, recovery re-queued the row and another worker claimed it
        RLRun.objects.filter(pk=row.pk).update(heartbeat_at=timezone.now() - LONG_AGO)
        assert RLRun.recover_stale(send=lambda pk: None) == [row.pk] and RLRun.claim(row.pk, "worker-b")
        raise_if_cancelled(row)
        pytest.fail("a taken-over job must stop")

    assert execute_job("rl_run", run.pk, steps) == "taken over"
    run.refresh_from_db()
    assert (run.status, run.worker, run.error) == (JobStatus.RUNNING, "worker-b", "")


def test_a_job_that_ends_after_losing_its_row_does_not_overwrite_the_new_owners_state(run):
    def steps(row):
        RLRun.objects.filter(pk=row.pk).update(worker="worker-b")
        raise RuntimeError("late failure of the old owner")

    execute_job("rl_run", run.pk, steps)
    run.refresh_from_db()
    assert (run.status, run.error) == (JobStatus.RUNNING, "")


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_survives_a_database_error(run, settings, monkeypatch):
    from django.db import OperationalError

    settings.JOB_HEARTBEAT_SECONDS = 0.1
    calls = []
    beat = RLRun.heartbeat.__func__

    def flaky(cls, pk, worker=None):
        calls.append(pk)
        if len(calls) == 1:
            raise OperationalError("database is locked")
        return beat(cls, pk, worker)

    monkeypatch.setattr(RLRun, "heartbeat", classmethod(flaky))
    assert execute_job("rl_run", run.pk, lambda row: time.sleep(0.6)) == JobStatus.SUCCEEDED
    assert len(calls) >= 3  # it went on beating after the error


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_thread_stamps_the_row_while_a_long_step_runs(run, settings):
    settings.JOB_HEARTBEAT_SECONDS = 0.2
    beats = []

    def one_long_step(row):
        start = RLRun.objects.get(pk=row.pk).heartbeat_at
        time.sleep(1.0)  # no progress line, no log: only the thread can show the worker is alive
        beats.append(RLRun.objects.get(pk=row.pk).heartbeat_at - start)

    assert execute_job("rl_run", run.pk, one_long_step) == JobStatus.SUCCEEDED
    assert beats[0] >= timedelta(seconds=0.6)
    assert worker_name() in RLRun.objects.get(pk=run.pk).log



@pytest.mark.django_db(transaction=True)
def test_a_job_hung_past_the_cancel_grace_loses_its_heartbeat_and_recovery_cancels_it(run, settings):
    settings.JOB_HEARTBEAT_SECONDS = 0.05
    settings.JOB_CANCEL_GRACE_SECONDS = 0.3
    settings.JOB_STALE_AFTER_SECONDS = 0.5

    def hung(row):
        assert RLRun.objects.get(pk=row.pk).request_cancel() == "cancel requested"  # alive: only flagged
        time.sleep(1.2)  # hung: never checks between steps, but its worker lives
        assert RLRun.recover_stale(send=pytest.fail) == []  # any worker's next recovery pass
        with pytest.raises(JobTakenOver):  # what the job sees if it ever wakes
            row.should_stop()

    assert execute_job("rl_run", run.pk, hung) == "taken over"
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and "heartbeat stopped, so recovery" in run.log
    assert "cancelled as requested" in run.log
