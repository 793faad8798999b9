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
    assert run.config["tau"] == 0.3 and run.config["iterations"] == 3  # a PATCH keeps the knobs it omits
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


def test_a_patch_of_the_config_keeps_the_knobs_it_omits(api_for, run, alice):
    response = api_for(alice).patch(f"/api/runs/{run.pk}/", {"config": {"batch_size": 4}}, format="json")
    assert response.status_code == 200, response.json()
    run.refresh_from_db()
    assert (run.config["batch_size"], run.config["trainer_backend"], run.config["iterations"]) == (4, "noop-test", 3)
    assert run.total_iterations == 3


def test_a_patched_config_is_validated_as_a_whole(api_for, run, alice):
    response = api_for(alice).patch(f"/api/runs/{run.pk}/", {"config": {"length_penalty_warmup_iterations": 5}},
                                    format="json")  # the stored iterations are 3
    assert response.status_code == 400
    assert response.json()["config"] == {"length_penalty_warmup_iterations": ["must not exceed iterations"]}


def test_a_put_replaces_the_config_with_defaults_for_what_it_omits(api_for, project, prompt_set, run, alice):
    response = api_for(alice).put(f"/api/runs/{run.pk}/", {"name": "run-1", "prompt_set": prompt_set.pk,
                                                          "config": {"batch_size": 4}}, format="json")
    assert response.status_code == 200, response.json()
    run.refresh_from_db()
    assert (run.config["batch_size"], run.config["iterations"]) == (4, RLConfig().iterations)
    assert run.total_iterations == RLConfig().iterations


def test_a_run_on_an_empty_prompt_set_is_refused(api_for, project, alice):
    from webapp.prompts.models import PromptSet

    empty = PromptSet.objects.create(project=project, name="empty")
    response = post_run(api_for(alice), project, empty)
    assert response.status_code == 400
    assert response.json() == {"prompt_set": ["prompt set 'empty' has no prompts: upload prompts to it (or choose "
                                              "another set) before launching a run"]}
    assert not RLRun.objects.exists()


def test_a_run_on_prompts_with_images_is_refused_rather_than_trained_without_them(api_for, project, alice):
    from webapp.prompts.models import Prompt, PromptSet

    pictured = PromptSet.objects.create(project=project, name="pictured")
    Prompt.objects.create(prompt_set=pictured, position=1, problem="2+2", answer="4")
    Prompt.objects.create(prompt_set=pictured, position=2, problem="What does the plot show?", answer="a",
                          image="plots/one.png")
    response = post_run(api_for(alice), project, pictured)
    assert response.status_code == 400
    assert response.json() == {"prompt_set": [
        "prompt set 'pictured': 1 prompt(s) have an image (first: #2): RL trains on text prompts only and would leave "
        "the images out; use a prompt set without images (images are scored in evaluation suites, e.g. MathVista)"]}
    assert not RLRun.objects.exists()


def test_evaluating_every_n_iterations_needs_a_suite(api_for, project, prompt_set, suite, alice):
    api = api_for(alice)
    response = post_run(api, project, prompt_set, evaluate_every_iterations=5)
    assert response.status_code == 400
    assert list(response.json()["config"]) == ["evaluate_every_iterations"]
    assert "choose an evaluation_suite" in response.json()["config"]["evaluate_every_iterations"][0]
    with_suite = api.post("/api/runs/", {"project": project.pk, "name": "r", "prompt_set": prompt_set.pk,
                                         "evaluation_suite": suite.pk, "config": {"evaluate_every_iterations": 5}},
                          format="json")
    assert with_suite.status_code == 201


def test_cancelling_a_cancelled_run_answers_a_message(api_for, run, alice):
    api = api_for(alice)
    api.post(f"/api/runs/{run.pk}/cancel/")
    response = api.post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 409
    assert response.json() == {"detail": "nothing to cancel: this job already ended (cancelled); only a queued or "
                                         "running job can be cancelled"}


def test_lists_take_a_page_size_up_to_a_maximum(api_for, project, prompt_set, run, alice, monkeypatch):
    from webapp.pagination import Pagination

    RLRun.objects.bulk_create(RLRun(project=project, name=f"r{index}", prompt_set=prompt_set, config=run.config)
                              for index in range(4))
    api = api_for(alice)
    page = api.get("/api/runs/?page_size=2").json()
    assert (page["count"], len(page["results"])) == (5, 2)
    assert "page_size=2" in page["next"]
    assert len(api.get(page["next"]).json()["results"]) == 2
    assert Pagination.max_page_size == 500
    monkeypatch.setattr(Pagination, "max_page_size", 3)
    assert len(api.get("/api/runs/?page_size=100000").json()["results"]) == 3  # clamped, not refused
