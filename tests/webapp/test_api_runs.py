"""Creating, validating, updating and cancelling RL runs through the API."""

from __future__ import annotations

import pytest

from training.config import RLConfig
from webapp.jobs import JobStatus
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db


def post_run(api, project, prompt_set, **config):
    return api.post("/api/runs/", {"project": project.pk, "name": "r", "prompt_set": prompt_set.pk,
                                   "config": config}, format="json")


def test_it_creates_a_queued_run_with_defaults_filled_in(api_for, project, prompt_set, alice):
    response = post_run(api_for(alice), project, prompt_set, tau=0.5, iterations=7)
    assert response.status_code == 201
    run = RLRun.objects.get(pk=response.json()["id"])
    assert run.status == JobStatus.QUEUED
    assert run.owner == alice and run.total_iterations == 7
    assert run.config["tau"] == 0.5
    assert run.config["samples_per_problem"] == RLConfig().samples_per_problem
    assert run.config["trainer_backend"] == "torch"  # the no-op test engine is never the default


@pytest.mark.parametrize(
    "knob, value, reason",
    [
        ("tau", -1, "greater than 0"),
        ("tau", 0, "greater than 0"),
        ("samples_per_problem", 0, "at least 1"),
        ("rollout_engine", "tensorrt", "unknown value"),
        ("trainer_backend", "jax", "unknown value"),
        ("sampling_strategy", "random", "unknown value"),
        ("learning_rate", "fast", "must be a number"),
        ("iterations", 2.5, "whole number"),
        ("batch_size", -3, "at least 1"),
        ("length_penalty_weight", -0.1, "at least 0"),
        ("temperature", 0, "greater than 0"),
        ("made_up_knob", 1, "unknown setting"),
    ],
)
def test_it_refuses_an_invalid_knob_naming_it(api_for, project, prompt_set, alice, knob, value, reason):
    response = post_run(api_for(alice), project, prompt_set, **{knob: value})
    assert response.status_code == 400
    errors = response.json()["config"]
    assert list(errors) == [knob]
    assert reason in errors[knob][0]
    assert not RLRun.objects.exists()


def test_it_refuses_a_budget_above_the_response_limit(api_for, project, prompt_set, alice):
    response = post_run(api_for(alice), project, prompt_set, max_response_tokens=64,
                        partial_rollout_token_budget=128)
    assert response.status_code == 400
    assert "partial_rollout_token_budget" in response.json()["config"]


def test_it_refuses_a_prompt_set_of_another_project(api_for, project, alice, charlie):
    from webapp.projects.models import Project
    from webapp.prompts.models import PromptSet

    other = Project.objects.create(name="Other", slug="other")
    other.add_member(alice)
    foreign = PromptSet.objects.create(project=other, name="theirs")
    response = post_run(api_for(alice), project, foreign)
    assert response.status_code == 400
    assert "prompt_set" in response.json()


def test_config_changes_only_while_queued(api_for, run, alice):
    api = api_for(alice)
    assert api.patch(f"/api/runs/{run.pk}/", {"config": {"tau": 0.3}}, format="json").status_code == 200
    run.refresh_from_db()
    assert run.config["tau"] == 0.3 and run.config["iterations"] == RLConfig().iterations
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING)
    refused = api.patch(f"/api/runs/{run.pk}/", {"config": {"tau": 0.9}}, format="json")
    assert refused.status_code == 400 and "config" in refused.json()
    renamed = api.patch(f"/api/runs/{run.pk}/", {"name": "renamed"}, format="json")
    assert renamed.status_code == 200


def test_cancelling_a_queued_run_ends_it(api_for, run, alice):
    response = api_for(alice).post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 200 and response.json()["outcome"] == "cancelled"
    run.refresh_from_db()
    assert run.status == JobStatus.CANCELLED and run.finished_at is not None


def test_cancelling_a_running_run_asks_it_to_stop(api_for, run, alice):
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING)
    response = api_for(alice).post(f"/api/runs/{run.pk}/cancel/")
    assert response.json()["outcome"] == "cancel requested"
    run.refresh_from_db()
    assert run.status == JobStatus.RUNNING and run.cancel_requested


def test_cancelling_a_finished_run_is_a_conflict(api_for, run, alice):
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.SUCCEEDED)
    assert api_for(alice).post(f"/api/runs/{run.pk}/cancel/").status_code == 409


def test_metrics_filter_by_run_and_iteration_range(api_for, run, alice):
    from webapp.runs.models import IterationMetric

    IterationMetric.objects.bulk_create(
        IterationMetric(run=run, iteration=i, train_accuracy=i / 10, mean_response_length=i,
                        p95_response_length=2 * i) for i in range(1, 11)
    )
    response = api_for(alice).get(f"/api/iteration-metrics/?run={run.pk}&iteration_min=3&iteration_max=5")
    assert [row["iteration"] for row in response.json()["results"]] == [3, 4, 5]
