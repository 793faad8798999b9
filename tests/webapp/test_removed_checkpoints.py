"""Checkpoints whose files keep_last_checkpoints removed: shown as removed, refused as a choice for new jobs."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from django.urls import reverse

from webapp.evals.models import EvalRun
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db

REMOVED_AT = datetime(2026, 3, 4, 5, 6, tzinfo=timezone.utc)


@pytest.fixture
def removed(run, project):
    return Checkpoint.objects.create(project=project, run=run, iteration=2, path="/checkpoints/run-1/2",
                                     files_removed_at=REMOVED_AT)


@pytest.fixture
def kept(run, project):
    return Checkpoint.objects.create(project=project, run=run, iteration=3, path="/checkpoints/run-1/3")


def removal_message(checkpoint) -> str:
    return (f"checkpoint #{checkpoint.pk} (run-1 @ 2): its files were removed by keep_last_checkpoints on "
            "2026-03-04 05:06; choose a checkpoint whose files are kept")


def test_the_checkpoint_api_shows_when_the_files_were_removed(api_for, alice, removed, kept):
    api = api_for(alice)
    assert api.get(f"/api/checkpoints/{removed.pk}/").json()["files_removed_at"] == "2026-03-04T05:06:00Z"
    assert api.get(f"/api/checkpoints/{kept.pk}/").json()["files_removed_at"] is None


def test_files_removed_at_is_not_set_through_the_api(api_for, alice, project):
    response = api_for(alice).post("/api/checkpoints/", {"project": project.pk, "path": "/x",
                                                         "files_removed_at": "2026-01-01T00:00:00Z"}, format="json")
    assert response.status_code == 400
    assert response.json()["files_removed_at"][0].startswith("read-only (set by the run's worker when "
                                                             "keep_last_checkpoints removes the files)")


def test_evaluating_a_removed_checkpoint_is_refused_naming_the_field(api_for, alice, project, suite, removed):
    response = api_for(alice).post("/api/evaluations/", {"project": project.pk, "suite": suite.pk,
                                                         "checkpoint": removed.pk}, format="json")
    assert response.status_code == 400
    assert response.json() == {"checkpoint": [removal_message(removed)]}
    assert not EvalRun.objects.exists()


def test_a_kept_checkpoint_of_the_same_run_is_still_evaluated(api_for, alice, project, suite, removed, kept):
    response = api_for(alice).post("/api/evaluations/", {"project": project.pk, "suite": suite.pk,
                                                         "checkpoint": kept.pk}, format="json")
    assert response.status_code == 201, response.json()


def test_a_variant_of_a_removed_parent_checkpoint_is_refused(api_for, alice, project, removed):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "v", "method": "dpo",
                                                      "parent_checkpoint": removed.pk}, format="json")
    assert response.status_code == 400
    assert response.json() == {"parent_checkpoint": [removal_message(removed)]}
    assert not Long2ShortVariant.objects.exists()


@pytest.mark.parametrize("knob", ["other_checkpoint_ids", "other_run_iterations"])
def test_merging_a_removed_checkpoint_is_refused_naming_the_knob(api_for, alice, project, run, removed, knob):
    value = str(removed.pk) if knob == "other_checkpoint_ids" else "0,2"
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "m", "method": "merge",
                                                      "parent_run": run.pk, "parameters": {knob: value}},
                                   format="json")
    assert response.status_code == 400
    assert response.json() == {"parameters": {knob: [removal_message(removed)]}}


def test_a_finished_variant_whose_parent_checkpoint_went_can_still_be_renamed(api_for, alice, project, removed):
    variant = Long2ShortVariant.objects.create(project=project, name="v", method="dpo", parent_checkpoint=removed,
                                               status="succeeded")
    response = api_for(alice).patch(f"/api/variants/{variant.pk}/", {"name": "renamed"}, format="json")
    assert response.status_code == 200, response.json()


def test_the_evaluation_form_refuses_a_removed_checkpoint(client_for, alice, suite, removed):
    data = {"suite": str(suite.pk), "checkpoint": str(removed.pk), "model": "", "rollout_engine": "torch",
            "seed": "0"}
    response = client_for(alice).post(reverse("evaluation-launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors["checkpoint"] == [removal_message(removed)]
    assert "(files removed)" in response.content.decode()  # the choice says so before it is picked
    assert not EvalRun.objects.exists()


def test_the_variant_form_refuses_a_removed_parent_and_merge_checkpoint(client_for, alice, run, removed):
    data = {"name": "m", "method": "merge", "parent_checkpoint": removed.pk, "parent_weight": "0.5",
            "other_run_iterations": "2"}
    errors = client_for(alice).post(reverse("variant-launch"), data).context["form"].errors
    assert errors["parent_checkpoint"] == [removal_message(removed)]
    assert errors["other_run_iterations"] == [removal_message(removed)]
    assert not Long2ShortVariant.objects.exists()


def test_the_run_page_lists_a_removed_checkpoint_as_removed(client_for, alice, run, removed, kept):
    content = client_for(alice).get(reverse("run-detail", kwargs={"pk": run.pk})).content.decode()
    rows = [row for row in content.split("<tr>") if "/checkpoints/run-1/" in row]
    assert len(rows) == 2
    assert [">removed<" in row for row in rows] == [False, True]  # newest first: 3 kept, 2 removed


# ---------------------------------------------------------------- the re-check under the row lock at creation


def removed_meanwhile(monkeypatch, cls, method: str, checkpoint) -> None:
    """The worker records the checkpoint's removal right after `cls.method` (the validation) passed."""
    validate = getattr(cls, method)

    def then_removed(self, *args, **kwargs):
        result = validate(self, *args, **kwargs)
        Checkpoint.objects.filter(pk=checkpoint.pk).update(files_removed_at=REMOVED_AT)
        return result

    monkeypatch.setattr(cls, method, then_removed)


def removed_message(checkpoint) -> str:
    return (f"checkpoint #{checkpoint.pk} (run-1 @ {checkpoint.iteration}): its files were removed by "
            "keep_last_checkpoints on 2026-03-04 05:06; choose a checkpoint whose files are kept")


def test_the_evaluation_form_refuses_a_checkpoint_removed_after_its_validation(client_for, alice, suite, kept,
                                                                             monkeypatch):
    from webapp.pages.evaluation_forms import EvaluationLaunchForm

    removed_meanwhile(monkeypatch, EvaluationLaunchForm, "clean", kept)
    data = {"suite": str(suite.pk), "checkpoint": str(kept.pk), "model": "", "rollout_engine": "torch",
            "seed": "0"}
    response = client_for(alice).post(reverse("evaluation-launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors["checkpoint"] == [removed_message(kept)]
    assert not EvalRun.objects.exists()


def test_the_evaluation_api_refuses_a_checkpoint_removed_after_its_validation(api_for, alice, project, suite, kept,
                                                                            monkeypatch):
    from webapp.evals.api import EvalRunSerializer

    removed_meanwhile(monkeypatch, EvalRunSerializer, "validate", kept)
    response = api_for(alice).post("/api/evaluations/", {"project": project.pk, "suite": suite.pk,
                                                         "checkpoint": kept.pk}, format="json")
    assert response.status_code == 400
    assert response.json() == {"checkpoint": [removed_message(kept)]}
    assert not EvalRun.objects.exists()


def test_the_variant_api_refuses_a_parent_or_merged_checkpoint_removed_after_its_validation(
        api_for, alice, project, run, kept, monkeypatch):
    from webapp.long2short.api import Long2ShortVariantSerializer

    removed_meanwhile(monkeypatch, Long2ShortVariantSerializer, "validate", kept)
    api = api_for(alice)
    response = api.post("/api/variants/", {"project": project.pk, "name": "v", "method": "dpo",
                                           "parent_checkpoint": kept.pk}, format="json")
    assert response.status_code == 400
    assert response.json() == {"parent_checkpoint": [removed_message(kept)]}
    Checkpoint.objects.filter(pk=kept.pk).update(files_removed_at=None)
    response = api.post("/api/variants/", {"project": project.pk, "name": "m", "method": "merge",
                                           "parent_run": run.pk, "parameters": {"other_run_iterations": "3"}},
                        format="json")
    assert response.status_code == 400
    assert response.json() == {"parameters": {"other_run_iterations": [removed_message(kept)]}}
    assert not Long2ShortVariant.objects.exists()


def test_the_variant_form_refuses_a_merged_checkpoint_removed_after_its_validation(client_for, alice, run, kept,
                                                                                 monkeypatch):
    from webapp.pages.variant_forms import VariantLaunchForm

    removed_meanwhile(monkeypatch, VariantLaunchForm, "clean", kept)
    data = {"name": "m", "method": "merge", "parent_run": run.pk, "parent_weight": "0.5",
            "other_checkpoint_ids": str(kept.pk)}
    response = client_for(alice).post(reverse("variant-launch"), data)
    assert response.status_code == 200
    assert response.context["form"].errors["other_checkpoint_ids"] == [removed_message(kept)]
    assert not Long2ShortVariant.objects.exists()


def test_launching_locks_the_chosen_checkpoint_row(project, suite, kept):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from webapp.evals.services import launch_evaluation

    with CaptureQueriesContext(connection) as queries:
        launch_evaluation(project=project, suite=suite, checkpoint=kept)
    assert any("FOR UPDATE" in query["sql"] and '"runs_checkpoint"' in query["sql"] for query in queries)
