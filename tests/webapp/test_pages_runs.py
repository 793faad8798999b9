"""RL run pages: list, launch form generated from RLConfig, detail with chart, status JSON and cancel."""

from __future__ import annotations

import json

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

from common.knobs import config_to_dict, describe_knobs, parse_config
from training.config import RLConfig
from webapp.projects.models import Project
from webapp.prompts.services import create_prompt_set_from_file
from webapp.runs.models import IterationMetric, RLRun

pytestmark = pytest.mark.django_db

OTHER_JSONL = b'{"problem": "What is 1+1?", "answer": "2"}\n'


def launch_data(prompt_set, **overrides) -> dict:
    """What the launch form posts when left at its defaults, with some fields changed."""
    data = {knob["name"]: "" if knob["default"] is None else str(knob["default"]) for knob in describe_knobs(RLConfig)
            if not knob["deployment"]}
    data.update(name="launched", description="", prompt_set=str(prompt_set.pk), evaluation_suite="")
    data.update({name: str(value) for name, value in overrides.items()})
    return data


def add_metrics(run, count: int) -> None:
    IterationMetric.objects.bulk_create(
        IterationMetric(run=run, iteration=i, train_accuracy=i / count, mean_response_length=100 + i,
                        p95_response_length=200 + 2 * i, loss=0.5, kl=0.01, tokens_generated=1000, seconds=1.5)
        for i in range(1, count + 1)
    )


def run_url(name: str, run) -> str:
    return reverse(name, kwargs={"pk": run.pk})


@pytest.mark.parametrize("user_name", ["alice", "bob"])
def test_members_see_the_run_page(client_for, request, run, user_name):
    response = client_for(request.getfixturevalue(user_name)).get(run_url("run-detail", run))
    assert response.status_code == 200
    assert b"run-1" in response.content


@pytest.mark.parametrize("url_name", ["run-detail", "run-status"])
def test_outsider_gets_404_on_run_page(client_for, charlie, run, url_name):
    assert client_for(charlie).get(run_url(url_name, run)).status_code == 404


def test_run_page_loads_plotly_from_static(client_for, alice, run):
    content = client_for(alice).get(run_url("run-detail", run)).content.decode()
    assert '<script src="/static/plotly/plotly.min.js"></script>' in content
    assert '<script src="/static/run_chart.js"></script>' in content
    assert finders.find("plotly/plotly.min.js") is not None
    assert finders.find("run_chart.js") is not None


def test_run_page_embeds_the_metric_series_for_the_chart(client_for, alice, run):
    add_metrics(run, 3)
    response = client_for(alice).get(run_url("run-detail", run))
    content = response.content.decode()
    start = content.index('<script id="run-chart-data" type="application/json">') + len(
        '<script id="run-chart-data" type="application/json">')
    series = json.loads(content[start:content.index("</script>", start)])
    assert series == {"iteration": [1, 2, 3], "train_accuracy": [1 / 3, 2 / 3, 1.0],
                      "mean_response_length": [101.0, 102.0, 103.0], "p95_response_length": [202.0, 204.0, 206.0]}


def test_run_page_shows_iteration_progress_and_resolved_config(client_for, alice, run):
    RLRun.objects.filter(pk=run.pk).update(status="running", current_iteration=2, progress=2 / 3)
    content = client_for(alice).get(run_url("run-detail", run)).content.decode()
    assert ('Iteration <strong data-field="current_iteration">2</strong> of '
            '<strong data-field="total_iterations">3</strong>') in content
    assert "width: 67%" in content
    assert "<code>trainer_backend</code>" in content and "<code>noop-test</code>" in content
    assert "Cancel run" in content


def test_failed_run_page_shows_error_and_traceback(client_for, alice, run):
    RLRun.objects.filter(pk=run.pk).update(status="failed", error="CUDA out of memory",
                                           traceback="Traceback (most recent call last):\n  boom")
    content = client_for(alice).get(run_url("run-detail", run)).content.decode()
    assert "CUDA out of memory" in content
    assert "Traceback (most recent call last):" in content
    assert "Cancel run" not in content


def test_run_status_json_reports_progress_and_metrics(client_for, bob, run):
    add_metrics(run, 2)
    RLRun.objects.filter(pk=run.pk).update(status="running", current_iteration=2, progress=2 / 3)
    RLRun.append_log(run.pk, "iteration 2 done")
    payload = client_for(bob).get(run_url("run-status", run)).json()
    assert payload["status"] == "running"
    assert payload["is_terminal"] is False
    assert (payload["current_iteration"], payload["total_iterations"]) == (2, 3)
    assert payload["metrics"]["iteration"] == [1, 2]
    assert "iteration 2 done" in payload["log_tail"]


def test_member_cancels_a_queued_run(client_for, bob, run):
    response = client_for(bob).post(run_url("run-cancel", run))
    assert response.status_code == 302
    assert response.url == run_url("run-detail", run)
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert run.cancel_requested


def test_cancel_of_a_running_run_asks_the_worker_to_stop(client_for, alice, run):
    RLRun.objects.filter(pk=run.pk).update(status="running")
    client_for(alice).post(run_url("run-cancel", run))
    run.refresh_from_db()
    assert (run.status, run.cancel_requested) == ("running", True)


def test_outsider_gets_404_on_run_cancel_and_the_run_stays_queued(client_for, charlie, run):
    assert client_for(charlie).post(run_url("run-cancel", run)).status_code == 404
    run.refresh_from_db()
    assert run.status == "queued"


def test_run_cancel_refuses_get(client_for, alice, run):
    assert client_for(alice).get(run_url("run-cancel", run)).status_code == 405


def test_run_list_shows_the_current_projects_runs(client_for, bob, run):
    content = client_for(bob).get(reverse("run-list")).content.decode()
    assert run_url("run-detail", run) in content


def test_run_list_with_many_runs_uses_a_bounded_number_of_queries(client_for, alice, run,
                                                                   django_assert_max_num_queries):
    RLRun.objects.bulk_create(
        RLRun(project=run.project, name=f"run-{i}", prompt_set=run.prompt_set, config=run.config, owner=run.owner,
              total_iterations=3) for i in range(40)
    )
    client = client_for(alice)
    with django_assert_max_num_queries(10):
        response = client.get(reverse("run-list"))
    assert len(response.context["page"].object_list) == 25


def test_run_page_with_many_metric_rows_uses_a_bounded_number_of_queries(client_for, alice, run,
                                                                         django_assert_max_num_queries):
    add_metrics(run, 300)
    client = client_for(alice)
    with django_assert_max_num_queries(12):
        response = client.get(run_url("run-detail", run))
    assert len(response.context["metrics_page"].object_list) == 50
    assert len(response.context["chart_data"]["iteration"]) == 300


def test_launch_form_groups_knobs_with_defaults_and_help(client_for, alice, prompt_set):
    response = client_for(alice).get(reverse("run-launch"))
    assert response.status_code == 200
    content = response.content.decode()
    form = response.context["form"]
    groups = [title for title, _ in form.knob_fieldsets()]
    assert groups == ["Model", "Data and sampling", "Optimization", "Length penalty", "Rollouts", "Evaluation",
                      "Execution"]
    assert "<legend>Length penalty</legend>" in content
    assert 'name="tau" value="0.1"' in content
    assert "KL-regularisation strength tau" in content
    assert '<option value="torch" selected>torch</option>' in content
    assert '<option value="noop-test">noop-test</option>' in content
    assert form["trainer_backend"].value() == "torch"
    assert form.fields["partial_rollout_token_budget"].required is False
    assert form.fields["iterations"].required is True


def test_launch_form_offers_only_the_current_projects_prompt_sets_and_suites(client_for, alice, charlie,
                                                                              prompt_set, suite):
    foreign = Project.objects.create(name="Other", slug="other")
    foreign.add_member(charlie)
    foreign_set = create_prompt_set_from_file(foreign, "foreign", OTHER_JSONL, "jsonl")
    form = client_for(alice).get(reverse("run-launch")).context["form"]
    assert list(form.fields["prompt_set"].queryset) == [prompt_set]
    assert list(form.fields["evaluation_suite"].queryset) == [suite]
    assert foreign_set not in form.fields["prompt_set"].queryset


def test_launch_creates_a_queued_run_with_the_resolved_config(client_for, bob, prompt_set, suite):
    data = launch_data(prompt_set, tau=0.25, iterations=5, partial_rollout_token_budget=64)
    data["evaluation_suite"] = str(suite.pk)
    response = client_for(bob).post(reverse("run-launch"), data)
    run = RLRun.objects.get(name="launched")
    assert response.status_code == 302
    assert response.url == run_url("run-detail", run)
    assert run.status == "queued"
    assert (run.owner, run.prompt_set, run.evaluation_suite) == (bob, prompt_set, suite)
    assert run.project == prompt_set.project
    assert run.total_iterations == 5
    changed = {"tau": 0.25, "iterations": 5, "partial_rollout_token_budget": 64}
    assert run.config == config_to_dict(parse_config(RLConfig, changed))
    assert run.config["trainer_backend"] == "torch"
    assert run.config["exclude_segments_older_than"] is None


def test_launch_refuses_negative_tau_naming_the_tau_field(client_for, alice, prompt_set):
    response = client_for(alice).post(reverse("run-launch"), launch_data(prompt_set, tau=-1))
    assert response.status_code == 200
    assert response.context["form"].errors["tau"] == ["must be greater than 0.0 and at most 1000.0, not -1.0"]
    assert b"must be greater than 0.0" in response.content
    assert not RLRun.objects.filter(name="launched").exists()


def test_launch_attaches_cross_field_errors_to_their_field(client_for, alice, prompt_set):
    data = launch_data(prompt_set, max_response_tokens=100, partial_rollout_token_budget=200)
    response = client_for(alice).post(reverse("run-launch"), data)
    assert response.context["form"].errors["partial_rollout_token_budget"] == ["must not exceed max_response_tokens"]
    assert not RLRun.objects.exists()


def test_launch_refuses_an_empty_prompt_set_as_the_api_does(client_for, alice, project):
    from webapp.prompts.models import PromptSet

    empty = PromptSet.objects.create(project=project, name="empty")
    response = client_for(alice).post(reverse("run-launch"), launch_data(empty))
    assert response.status_code == 200
    assert response.context["form"].errors["prompt_set"] == [
        "prompt set 'empty' has no prompts: upload prompts to it (or choose another set) before launching a run"]
    assert not RLRun.objects.exists()


def test_launch_refuses_periodic_evaluation_without_a_suite(client_for, alice, prompt_set):
    response = client_for(alice).post(reverse("run-launch"), launch_data(prompt_set, evaluate_every_iterations=5))
    assert response.status_code == 200
    assert "choose an evaluation_suite" in response.context["form"].errors["evaluate_every_iterations"][0]
    assert not RLRun.objects.exists()


def test_launch_refuses_a_prompt_set_of_another_project(client_for, alice, charlie, project):
    foreign = Project.objects.create(name="Other", slug="other")
    foreign.add_member(charlie)
    foreign_set = create_prompt_set_from_file(foreign, "foreign", OTHER_JSONL, "jsonl")
    response = client_for(alice).post(reverse("run-launch"), launch_data(foreign_set))
    assert response.status_code == 200
    assert "prompt_set" in response.context["form"].errors
    assert not RLRun.objects.exists()


def test_launch_refuses_an_unknown_choice(client_for, alice, prompt_set):
    response = client_for(alice).post(reverse("run-launch"), launch_data(prompt_set, rollout_engine="tensorflow"))
    assert "rollout_engine" in response.context["form"].errors
    assert not RLRun.objects.exists()


def test_launch_form_copies_a_visible_run(client_for, bob, run):
    form = client_for(bob).get(reverse("run-launch"), {"copy": run.pk}).context["form"]
    assert form["name"].value() == "run-1 (copy)"
    assert form["trainer_backend"].value() == "noop-test"
    assert form["iterations"].value() == 3
    assert form["prompt_set"].value() == run.prompt_set_id


def test_launch_form_ignores_a_copy_of_an_invisible_run(client_for, charlie, run):
    other = Project.objects.create(name="Other", slug="other")
    other.add_member(charlie)
    form = client_for(charlie).get(reverse("run-launch"), {"copy": run.pk}).context["form"]
    assert form["trainer_backend"].value() == "torch"
    assert not form["name"].value()
