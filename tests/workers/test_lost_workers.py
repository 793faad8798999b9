"""A job whose worker keeps dying (an OOM kill every time) fails after JOB_MAX_LOST_WORKERS deaths instead of
being re-queued for ever (webapp/jobs.py, `lost_workers`), on real Postgres."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.jobs import JobStatus
from webapp.runs.models import RLRun
from webapp.runs.services import resume_run

pytestmark = pytest.mark.django_db

LONG_AGO = timedelta(hours=1)


@pytest.fixture(autouse=True)
def three_deaths_allowed(settings):
    settings.JOB_MAX_LOST_WORKERS = 3


def worker_dies(run: RLRun, worker: str = "dead-host:1", **fields) -> RLRun:
    """The row as its killed worker left it: running, under that worker, its heartbeat long stale."""
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, worker=worker,
                                           heartbeat_at=timezone.now() - LONG_AGO, **fields)
    run.refresh_from_db()
    return run


def is_claimable(run: RLRun) -> bool:
    return RLRun.objects.filter(RLRun.claimable(), pk=run.pk).exists()


def test_each_death_is_counted_and_the_third_fails_the_job_without_sending_its_task(run):
    sent = []
    for death in (1, 2):
        worker_dies(run, worker=f"host:{death}")
        assert RLRun.recover_stale(send=sent.append) == [run.pk]
        run.refresh_from_db()
        assert (run.status, run.lost_workers) == (JobStatus.QUEUED, death)
        assert RLRun.claim(run.pk, f"host:{death + 1}")  # the re-sent task: a queued row, no death to count
        run.refresh_from_db()
        assert run.lost_workers == death
    assert "worker host:2 lost: no heartbeat for" in run.log and "(lost workers: 2; it fails at 3)" in run.log

    worker_dies(run, worker="host:3")
    assert RLRun.recover_stale(send=sent.append) == []
    run.refresh_from_db()
    assert sent == [run.pk, run.pk]  # no task for the third death
    assert (run.status, run.lost_workers) == (JobStatus.FAILED, 3) and run.finished_at
    assert run.error.startswith("its worker died 3 times while running it (killed from outside: most often the "
                                "machine ran out of memory; see the worker's log).")
    assert run.error.endswith("see the worker's log). Resume it to try again: it goes on from its newest checkpoint.")
    assert "worker host:3 lost" in run.log and run.log.rstrip().endswith(run.error)
    assert RLRun.recover_stale(send=sent.append) == [] and not RLRun.claim(run.pk, "host:4")  # it stays failed


def test_a_redelivered_claim_of_an_abandoned_running_row_counts_one_death(run):
    worker_dies(run)
    assert RLRun.claim(run.pk, "worker-b")  # Celery delivers the task again after its worker was killed
    run.refresh_from_db()
    assert (run.status, run.worker, run.lost_workers) == (JobStatus.RUNNING, "worker-b", 1)
    assert "worker dead-host:1 lost: no heartbeat for" in run.log
    assert "(lost workers: 1; it fails at 3); taken over" in run.log
    assert run.log.rstrip().endswith("started on worker-b")
    assert not RLRun.claim(run.pk, "worker-c")  # worker-b is alive: one claim won, one death counted
    run.refresh_from_db()
    assert run.lost_workers == 1


def test_a_claim_of_a_queued_row_counts_no_death(run):
    assert RLRun.claim(run.pk, "worker-a")
    run.refresh_from_db()
    assert (run.status, run.lost_workers) == (JobStatus.RUNNING, 0) and " lost" not in run.log


def test_no_claim_takes_an_abandoned_row_whose_death_would_reach_the_limit_and_recovery_fails_it(run):
    worker_dies(run, lost_workers=1)
    assert is_claimable(run)  # its second death: still taken over
    worker_dies(run, lost_workers=2)
    assert not is_claimable(run) and not RLRun.claim(run.pk, "worker-b")
    run.refresh_from_db()
    assert (run.status, run.worker, run.lost_workers) == (JobStatus.RUNNING, "dead-host:1", 2)  # left as it was
    assert RLRun.recover_stale(send=pytest.fail) == []
    run.refresh_from_db()
    assert (run.status, run.lost_workers) == (JobStatus.FAILED, 3) and "died 3 times" in run.error


def test_a_pending_cancel_at_the_limit_still_ends_cancelled(run):
    worker_dies(run, lost_workers=2, cancel_requested=True)
    assert RLRun.recover_stale(send=pytest.fail) == []
    run.refresh_from_db()
    assert (run.status, run.error) == (JobStatus.CANCELLED, "") and "cancelled as requested" in run.log


def test_a_resume_starts_the_count_again(run, alice):
    worker_dies(run, lost_workers=2)
    RLRun.recover_stale(send=pytest.fail)
    run.refresh_from_db()
    assert run.status == JobStatus.FAILED
    assert resume_run(run, alice)
    assert (run.status, run.lost_workers, run.error) == (JobStatus.QUEUED, 0, "")
    assert "resumed by alice (was failed: its worker died 3 times" in run.log
    assert RLRun.claim(run.pk, "worker-b")
    worker_dies(run, worker="worker-b")
    assert RLRun.recover_stale(send=lambda pk: None) == [run.pk]  # its first death since the resume
    run.refresh_from_db()
    assert (run.status, run.lost_workers) == (JobStatus.QUEUED, 1)


def test_one_allowed_death_fails_the_job_at_the_first(run, settings):
    settings.JOB_MAX_LOST_WORKERS = 1
    worker_dies(run)
    assert not is_claimable(run) and not RLRun.claim(run.pk, "worker-b")
    assert RLRun.recover_stale(send=pytest.fail) == []
    run.refresh_from_db()
    assert (run.status, run.lost_workers) == (JobStatus.FAILED, 1)
    assert run.error.startswith("its worker died once while running it")


def test_the_limit_must_allow_at_least_one_death(tmp_path):
    code = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='webapp.settings'; django.setup()"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "JOB_MAX_LOST_WORKERS": "0", "CELERY_BROKER_URL": "filesystem://",
                                 "MIRRORLAB_DATA_DIR": str(tmp_path)})
    assert output.returncode != 0
    assert "ImproperlyConfigured: JOB_MAX_LOST_WORKERS must be at least 1" in output.stderr
