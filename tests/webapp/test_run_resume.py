"""Resuming a failed or cancelled run from the browser and the API: it is queued again, once."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.jobs import JobStatus
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db


def set_state(run, status: str, **fields) -> None:
    RLRun.objects.filter(pk=run.pk).update(status=status, **fields)


def resume_url(run) -> str:
    return reverse("run-resume", kwargs={"pk": run.pk})


@pytest.mark.parametrize("status", [JobStatus.FAILED, JobStatus.CANCELLED])
def test_a_member_resumes_a_failed_or_cancelled_run(client_for, bob, run, status,
                                                    django_capture_on_commit_callbacks):
    set_state(run, status, error="CUDA out of memory", traceback="Traceback ...", cancel_requested=True,
              worker="host:1", current_iteration=2, progress=2 / 3)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client_for(bob).post(resume_url(run))
    assert response.status_code == 302 and response.url == reverse("run-detail", kwargs={"pk": run.pk})
    run.refresh_from_db()
    assert (run.status, run.cancel_requested, run.error, run.traceback, run.finished_at, run.worker) == \
        (JobStatus.QUEUED, False, "", "", None, "")
    assert (run.current_iteration, run.progress) == (2, 2 / 3)  # the worker resumes from its checkpoint
    assert f"resumed by bob (was {status}: CUDA out of memory)" in run.log
    assert len(callbacks) == 1  # the Celery task is sent once the transaction commits


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.SUCCEEDED])
def test_resume_leaves_other_states_alone(client_for, alice, run, status, django_capture_on_commit_callbacks):
    set_state(run, status)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client_for(alice).post(resume_url(run), follow=True)
    assert "Only a failed or cancelled run can be resumed" in response.content.decode()
    run.refresh_from_db()
    assert run.status == status and not callbacks and "resumed" not in run.log


def test_outsider_gets_404_on_resume_and_the_run_stays_failed(client_for, charlie, run):
    set_state(run, JobStatus.FAILED)
    assert client_for(charlie).post(resume_url(run)).status_code == 404
    run.refresh_from_db()
    assert run.status == JobStatus.FAILED


def test_resume_refuses_get(client_for, alice, run):
    set_state(run, JobStatus.FAILED)
    assert client_for(alice).get(resume_url(run)).status_code == 405


def test_the_resume_button_shows_only_for_a_resumable_run(client_for, alice, run):
    url = reverse("run-detail", kwargs={"pk": run.pk})
    queued = client_for(alice).get(url).content.decode()
    assert f'action="{resume_url(run)}" data-action="resume" hidden>' in queued
    set_state(run, JobStatus.CANCELLED)
    cancelled = client_for(alice).get(url).content.decode()
    assert f'action="{resume_url(run)}" data-action="resume">' in cancelled and "csrfmiddlewaretoken" in cancelled
    assert "Cancel run" not in cancelled


def test_the_api_resumes_a_cancelled_run(api_for, bob, run, django_capture_on_commit_callbacks):
    set_state(run, JobStatus.CANCELLED, cancel_requested=True)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api_for(bob).post(f"/api/runs/{run.pk}/resume/")
    assert response.status_code == 200
    assert (response.json()["outcome"], response.json()["status"]) == ("resumed", "queued")
    run.refresh_from_db()
    assert (run.status, run.cancel_requested) == (JobStatus.QUEUED, False) and len(callbacks) == 1


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.SUCCEEDED])
def test_the_api_answers_409_for_a_run_that_cannot_resume(api_for, alice, run, status):
    set_state(run, status)
    response = api_for(alice).post(f"/api/runs/{run.pk}/resume/")
    assert response.status_code == 409
    assert response.json() == {"detail": f"only a failed or cancelled run can be resumed; this run is {status}"}
    run.refresh_from_db()
    assert run.status == status


def test_the_api_hides_the_run_from_outsiders(api_for, charlie, run):
    set_state(run, JobStatus.FAILED)
    assert api_for(charlie).post(f"/api/runs/{run.pk}/resume/").status_code == 404
    run.refresh_from_db()
    assert run.status == JobStatus.FAILED
