"""A variant's parent run must be able to give it a model: one with a checkpoint whose files are kept, or one still
queued or running (the variant waits for it). The launch form lists only those; the API refuses the others."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from common.knobs import describe_knobs
from training.config import DPOConfig
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint, RLRun

pytestmark = pytest.mark.django_db

LAUNCH_URL = reverse("variant-launch")


def make_run(project, prompt_set, name: str, status: str, checkpoints: int = 0, removed: bool = False) -> RLRun:
    run = RLRun.objects.create(project=project, name=name, prompt_set=prompt_set, config={}, status=status,
                               total_iterations=3)
    for iteration in range(1, checkpoints + 1):
        Checkpoint.objects.create(project=project, run=run, iteration=iteration, path=f"/c/{name}/{iteration}",
                                  files_removed_at=timezone.now() if removed else None)
    return run


@pytest.fixture
def runs(project, prompt_set):
    return {
        "failed-empty": make_run(project, prompt_set, "failed-empty", JobStatus.FAILED),
        "succeeded-empty": make_run(project, prompt_set, "succeeded-empty", JobStatus.SUCCEEDED),
        "succeeded-removed": make_run(project, prompt_set, "succeeded-removed", JobStatus.SUCCEEDED, 2, removed=True),
        "succeeded": make_run(project, prompt_set, "succeeded", JobStatus.SUCCEEDED, 2),
        "failed-with-checkpoint": make_run(project, prompt_set, "failed-with-checkpoint", JobStatus.FAILED, 1),
        "running": make_run(project, prompt_set, "running", JobStatus.RUNNING),
    }


def dpo_data(**overrides) -> dict:
    data = {knob["name"]: "" if knob["default"] is None else str(knob["default"]) for knob in describe_knobs(DPOConfig)}
    data.update(name="v", method="dpo")
    data.update({name: str(value) for name, value in overrides.items()})
    return data


def test_the_form_lists_only_runs_that_can_give_a_model(client_for, alice, runs):
    form = client_for(alice).get(LAUNCH_URL, {"method": "dpo"}).context["form"]
    listed = {run.name for run in form.fields["parent_run"].queryset}
    assert listed == {"succeeded", "failed-with-checkpoint", "running"}


@pytest.mark.parametrize("name", ["failed-empty", "succeeded-empty", "succeeded-removed"])
def test_the_form_refuses_a_run_without_a_kept_checkpoint(client_for, alice, runs, name):
    response = client_for(alice).post(LAUNCH_URL, dpo_data(parent_run=runs[name].pk))
    assert response.status_code == 200 and "parent_run" in response.context["form"].errors
    assert not Long2ShortVariant.objects.exists()


def test_the_form_refuses_a_failed_run_alone_but_takes_one_of_its_checkpoints(client_for, alice, runs):
    run = runs["failed-with-checkpoint"]
    response = client_for(alice).post(LAUNCH_URL, dpo_data(parent_run=run.pk))
    assert "choose one of its checkpoints" in response.context["form"].errors["parent_run"][0]
    response = client_for(alice).post(LAUNCH_URL, dpo_data(parent_run=run.pk,
                                                           parent_checkpoint=run.checkpoints.get().pk))
    assert response.status_code == 302 and Long2ShortVariant.objects.get().parent_run == run


@pytest.mark.parametrize("name", ["failed-empty", "succeeded-empty", "succeeded-removed"])
def test_the_api_refuses_a_parent_run_without_a_kept_checkpoint_naming_parent_run(api_for, alice, project, runs,
                                                                                  name):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "v", "method": "dpo",
                                                      "parent_run": runs[name].pk}, format="json")
    assert response.status_code == 400, response.json()
    assert "has no checkpoint whose files are kept" in response.json()["parent_run"][0]
    assert not Long2ShortVariant.objects.exists()


@pytest.mark.parametrize("name", ["succeeded", "running"])
def test_the_api_takes_a_run_with_a_kept_checkpoint_or_still_running(api_for, alice, project, runs, name):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "v", "method": "dpo",
                                                      "parent_run": runs[name].pk}, format="json")
    assert response.status_code == 201, response.json()
