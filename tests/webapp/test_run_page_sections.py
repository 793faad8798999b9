"""The run page's "Checkpoints" and "Evaluations of its checkpoints" sections follow the run: the status JSON says
(sections_key) when they changed, and the page redraws them from its own HTML (static/run_sections.js)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils import timezone

from webapp.evals.models import EvalRun
from webapp.jobs import JobStatus
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db


def sections_key(client, run) -> str:
    return client.get(reverse("run-status", kwargs={"pk": run.pk})).json()["sections_key"]


def test_the_page_is_drawn_with_the_key_its_status_reports_and_marks_both_sections(client_for, alice, run):
    client = client_for(alice)
    page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    drawn_with = re.search(r'data-sections-key="([^"]*)"', page).group(1)
    assert drawn_with == sections_key(client, run) != ""
    assert 'id="run-checkpoints"' in page and 'id="run-evaluations"' in page
    assert "run_sections.js" in page


def test_the_key_changes_with_every_change_the_sections_show(client_for, alice, project, run, suite):
    client = client_for(alice)
    keys = [sections_key(client, run)]
    checkpoint = Checkpoint.objects.create(project=project, run=run, iteration=2, path="/x/iteration-000002")
    keys.append(sections_key(client, run))
    evaluation = EvalRun.objects.create(project=project, suite=suite, checkpoint=checkpoint)
    keys.append(sections_key(client, run))
    for status in (JobStatus.RUNNING, JobStatus.SUCCEEDED):
        EvalRun.objects.filter(pk=evaluation.pk).update(status=status)
        keys.append(sections_key(client, run))
    Checkpoint.objects.filter(pk=checkpoint.pk).update(files_removed_at=timezone.now())
    keys.append(sections_key(client, run))
    assert len(set(keys)) == len(keys), keys
    assert sections_key(client, run) == keys[-1]  # steady while nothing changes


def test_another_runs_checkpoints_leave_the_key_alone(client_for, alice, project, run, prompt_set):
    from webapp.runs.models import RLRun

    other = RLRun.objects.create(project=project, name="other", prompt_set=prompt_set, config={}, total_iterations=1)
    client = client_for(alice)
    before = sections_key(client, run)
    Checkpoint.objects.create(project=project, run=other, iteration=1, path="/y/iteration-000001")
    assert sections_key(client, run) == before


def test_an_ended_run_stays_live_while_its_checkpoints_evaluations_are_active(client_for, alice, project, run, suite):
    from webapp.runs.models import RLRun

    client = client_for(alice)
    status_url = reverse("run-status", kwargs={"pk": run.pk})
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.SUCCEEDED, finished_at=timezone.now())
    assert client.get(status_url).json()["is_live"] is False
    checkpoint = Checkpoint.objects.create(project=project, run=run, iteration=4, path="/c/4")
    evaluation = EvalRun.objects.create(project=project, suite=suite, checkpoint=checkpoint)  # queued behind the run
    assert client.get(status_url).json()["is_live"] is True  # the page keeps polling: its sections follow it
    EvalRun.objects.filter(pk=evaluation.pk).update(status=JobStatus.SUCCEEDED)
    assert client.get(status_url).json()["is_live"] is False
