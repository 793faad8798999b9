"""PUT and PATCH of runs, evaluations, variants (and other rows) write only the fields they give: what a worker writes
to the row meanwhile stays; a setting frozen once the job left the queue is refused even if a worker claimed it
after the request read the row."""

from __future__ import annotations

import pytest
from django.db.models import F, Value
from django.db.models.functions import Concat

from webapp.evals.api import BenchmarkSuiteViewSet, EvalRunViewSet
from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.long2short.api import Long2ShortVariantViewSet
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.api import RLRunViewSet
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db


def meanwhile(monkeypatch, viewset, **writes):
    """Between the request's get_object() and its save, the row's other writer (a worker) does `writes`."""
    original = viewset.get_object

    def get_object(self):
        row = original(self)
        type(row).objects.filter(pk=row.pk).update(**writes)
        return row

    monkeypatch.setattr(viewset, "get_object", get_object)


def test_renaming_a_run_keeps_the_finish_its_worker_wrote_meanwhile(api_for, alice, run, monkeypatch):
    RLRun.objects.filter(pk=run.pk).update(status="running", worker="w:1", current_iteration=1)
    meanwhile(monkeypatch, RLRunViewSet, status="succeeded", current_iteration=3, progress=1.0,
              log=Concat(F("log"), Value("succeeded\n")))
    response = api_for(alice).patch(f"/api/runs/{run.pk}/", {"name": "renamed"}, format="json")
    assert response.status_code == 200
    assert (response.json()["name"], response.json()["status"]) == ("renamed", "succeeded")
    run.refresh_from_db()
    assert (run.name, run.status, run.current_iteration, run.progress, run.log) == \
        ("renamed", "succeeded", 3, 1.0, "succeeded\n")


def test_renaming_a_variant_keeps_a_cancel_requested_meanwhile(api_for, alice, project, run, monkeypatch):
    variant = Long2ShortVariant.objects.create(project=project, name="v", parent_run=run, method="dpo",
                                               status="running", worker="w:1", parameters={}, owner=alice)
    meanwhile(monkeypatch, Long2ShortVariantViewSet, cancel_requested=True)
    response = api_for(alice).patch(f"/api/variants/{variant.pk}/", {"name": "renamed"}, format="json")
    assert response.status_code == 200 and response.json()["cancel_requested"] is True
    variant.refresh_from_db()
    assert (variant.name, variant.cancel_requested, variant.parameters) == ("renamed", True, {})


def test_a_config_change_of_a_run_claimed_meanwhile_is_refused_writing_nothing(api_for, alice, run, monkeypatch):
    meanwhile(monkeypatch, RLRunViewSet, status="running", worker="w:1")
    response = api_for(alice).patch(f"/api/runs/{run.pk}/", {"name": "renamed", "config": {"iterations": 7}},
                                    format="json")
    assert response.status_code == 400
    assert response.json() == {"config": ["can change only while the run is queued, not running"]}
    run.refresh_from_db()
    assert (run.name, run.config["iterations"], run.total_iterations, run.status) == ("run-1", 3, 3, "running")


def test_a_queued_runs_config_change_is_written_with_its_iteration_count(api_for, alice, run):
    response = api_for(alice).patch(f"/api/runs/{run.pk}/", {"config": {"iterations": 7}}, format="json")
    assert response.status_code == 200, response.json()
    run.refresh_from_db()
    assert (run.config["iterations"], run.total_iterations, run.config["trainer_backend"]) == (7, 7, "noop-test")


def test_a_change_of_an_evaluation_claimed_meanwhile_is_refused_naming_the_field(api_for, alice, project, suite,
                                                                              monkeypatch):
    evaluation = EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice)
    meanwhile(monkeypatch, EvalRunViewSet, status="running", worker="w:1")
    response = api_for(alice).patch(f"/api/evaluations/{evaluation.pk}/", {"seed": 5}, format="json")
    assert response.status_code == 400
    assert response.json() == {"seed": ["can change only while the evaluation is queued, not running"]}
    evaluation.refresh_from_db()
    assert (evaluation.seed, evaluation.status, evaluation.worker) == (0, "running", "w:1")


def test_a_running_variants_method_is_refused_naming_the_field(api_for, alice, project, run):
    variant = Long2ShortVariant.objects.create(project=project, name="v", parent_run=run, method="dpo",
                                               status="running", parameters={}, owner=alice)
    response = api_for(alice).patch(f"/api/variants/{variant.pk}/", {"method": "merge"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"method": ["can change only while the variant is queued, not running"]}
    variant.refresh_from_db()
    assert variant.method == "dpo"


def test_an_edit_of_a_suite_writes_only_the_fields_it_gives(api_for, alice, suite, monkeypatch):
    meanwhile(monkeypatch, BenchmarkSuiteViewSet, description="written by another request")
    response = api_for(alice).patch(f"/api/suites/{suite.pk}/", {"name": "renamed"}, format="json")
    assert response.status_code == 200, response.json()
    suite = BenchmarkSuite.objects.get(pk=suite.pk)
    assert (suite.name, suite.description) == ("renamed", "written by another request")


def test_a_resumed_run_refuses_a_recipe_its_checkpoints_would_refuse(api_for, alice, run, prompt_set):
    from webapp.prompts.models import PromptSet
    from webapp.runs.models import Checkpoint

    Checkpoint.objects.create(project=run.project, run=run, iteration=2, path="/c/2")
    RLRun.objects.filter(pk=run.pk).update(status="queued", current_iteration=2)  # resumed after a crash
    api = api_for(alice)
    stored_rate = run.config["learning_rate"]
    refused = api.patch(f"/api/runs/{run.pk}/", {"config": {"learning_rate": stored_rate * 10}}, format="json")
    assert refused.status_code == 400
    (message,) = refused.json()["config"]["learning_rate"]
    assert f"has trained with {stored_rate!r}" in message and "Launch like this" in message
    other = PromptSet.objects.create(project=run.project, name="other")
    assert "prompt_set" in api.patch(f"/api/runs/{run.pk}/", {"prompt_set": other.pk}, format="json").json()
    allowed = api.patch(f"/api/runs/{run.pk}/", {"config": {"iterations": 50}}, format="json")
    assert allowed.status_code == 200 and allowed.json()["total_iterations"] == 50  # extending a run is a resume knob
    run.refresh_from_db()
    assert (run.config["learning_rate"], run.prompt_set_id) == (stored_rate, prompt_set.pk)
