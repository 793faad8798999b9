"""Evaluation launch form: a checkpoint or a model on a suite, launched through launch_evaluation."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.projects.models import Project
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db

BOTH = "give a checkpoint or a model, not both"
NEITHER = "give a checkpoint or a model to evaluate (a preset such as 'tiny', a local folder or a hub id)"


@pytest.fixture
def checkpoint(run, project):
    return Checkpoint.objects.create(project=project, run=run, iteration=3, path="/checkpoints/run-1/3")


def launch_data(suite, **fields) -> dict:
    data = {"suite": str(suite.pk), "checkpoint": "", "model": "", "rollout_engine": "torch", "seed": "0"}
    data.update({name: str(value) for name, value in fields.items()})
    return data


def test_member_evaluates_a_checkpoint_on_a_suite(client_for, bob, suite, checkpoint):
    response = client_for(bob).post(reverse("evaluation-launch"),
                                    launch_data(suite, checkpoint=checkpoint.pk, rollout_engine="vllm", seed=7))
    evaluation = EvalRun.objects.get()
    assert response.status_code == 302
    assert response.url == reverse("evaluation-detail", kwargs={"pk": evaluation.pk})
    assert (evaluation.status, evaluation.project, evaluation.owner) == ("queued", suite.project, bob)
    assert (evaluation.suite, evaluation.checkpoint, evaluation.model) == (suite, checkpoint, "")
    assert (evaluation.rollout_engine, evaluation.seed) == ("vllm", 7)


def test_member_evaluates_a_model_by_name(client_for, alice, suite):
    response = client_for(alice).post(reverse("evaluation-launch"), launch_data(suite, model="  tiny "))
    assert response.status_code == 302
    evaluation = EvalRun.objects.get()
    assert (evaluation.checkpoint, evaluation.model, evaluation.rollout_engine) == (None, "tiny", "torch")


@pytest.mark.parametrize("with_checkpoint, model, message", [(True, "tiny", BOTH), (False, "", NEITHER)])
def test_launch_refuses_both_or_neither_checkpoint_and_model(client_for, alice, suite, checkpoint,
                                                             with_checkpoint, model, message):
    data = launch_data(suite, checkpoint=checkpoint.pk if with_checkpoint else "", model=model)
    response = client_for(alice).post(reverse("evaluation-launch"), data)
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert errors["checkpoint"] == [message] and errors["model"] == [message]
    assert not EvalRun.objects.exists()


@pytest.mark.parametrize("field, value", [("rollout_engine", "tensorflow"), ("seed", "-1"), ("suite", "")])
def test_launch_refuses_a_bad_field_naming_it(client_for, alice, suite, field, value):
    data = launch_data(suite, model="tiny")
    data[field] = value
    response = client_for(alice).post(reverse("evaluation-launch"), data)
    assert field in response.context["form"].errors
    assert not EvalRun.objects.exists()


def test_launch_refuses_a_seed_too_large_to_store(client_for, alice, suite):
    data = launch_data(suite, model="tiny", seed=3_000_000_000)
    response = client_for(alice).post(reverse("evaluation-launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors["seed"] == ["Ensure this value is less than or equal to 2147483647."]
    assert not EvalRun.objects.exists()


def test_launch_refuses_an_unknown_field(client_for, alice, suite):
    response = client_for(alice).post(reverse("evaluation-launch"), {**launch_data(suite, model="tiny"),
                                                                     "made_up": "1"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors()[0].startswith("unknown field(s) made_up; this form takes")
    assert not EvalRun.objects.exists()


def test_launch_refuses_a_model_path_that_resolves_too_long_to_store(client_for, alice, suite, tmp_path):
    deep = tmp_path.joinpath(*["d" * 60] * 5)
    deep.mkdir(parents=True)
    (tmp_path / "short").symlink_to(deep)
    response = client_for(alice).post(reverse("evaluation-launch"), launch_data(suite, model=tmp_path / "short"))
    assert response.status_code == 200
    (reason,) = response.context["form"].errors["model"]
    assert f"resolves to a path of {len(str(deep))} characters; at most 300 fit" in reason
    assert not EvalRun.objects.exists()


def test_launch_offers_only_the_current_projects_suites_and_checkpoints(client_for, alice, charlie, suite,
                                                                       checkpoint):
    other = Project.objects.create(name="Other", slug="other")
    other.add_member(charlie)
    foreign_suite = BenchmarkSuite.objects.create(project=other, name="foreign",
                                                  benchmarks=[{"benchmark": "aime24"}])
    form = client_for(alice).get(reverse("evaluation-launch")).context["form"]
    assert list(form.fields["suite"].queryset) == [suite]
    assert list(form.fields["checkpoint"].queryset) == [checkpoint]
    response = client_for(charlie).post(reverse("evaluation-launch"), launch_data(foreign_suite,
                                                                                 checkpoint=checkpoint.pk))
    assert "checkpoint" in response.context["form"].errors  # alice's checkpoint is not charlie's to evaluate
    assert not EvalRun.objects.exists()


def test_launch_form_prefills_suite_and_checkpoint_from_the_query(client_for, bob, suite, checkpoint):
    response = client_for(bob).get(reverse("evaluation-launch"), {"suite": suite.pk, "checkpoint": checkpoint.pk})
    form = response.context["form"]
    assert (form["suite"].value(), form["checkpoint"].value()) == (suite.pk, checkpoint.pk)
    assert f"run-1 @ 3 (#{checkpoint.pk})" in response.content.decode()


def test_launch_without_a_project_shows_the_hint(client_for, charlie):
    response = client_for(charlie).get(reverse("evaluation-launch"))
    assert response.status_code == 200 and response.context["form"] is None


def test_evaluation_list_links_the_launch_form(client_for, alice, project):
    assert reverse("evaluation-launch").encode() in client_for(alice).get(reverse("evaluation-list")).content
