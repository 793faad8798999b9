"""Every writable endpoint refuses fields it does not take, naming them, instead of dropping them silently."""

from __future__ import annotations

import pytest

from webapp.evals.models import EvalRun
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def write_routes(project, prompt_set, run, suite):
    """(method, url, a valid body) of every endpoint that writes; each body is accepted as it is."""
    prompt = prompt_set.prompts.first()
    return [
        ("post", "/api/projects/", {"name": "New", "slug": "new"}),
        ("patch", f"/api/projects/{project.pk}/", {"description": "d"}),
        ("post", f"/api/projects/{project.pk}/members/", {"username": "bob"}),
        ("post", "/api/prompt-sets/", {"project": project.pk, "name": "empty"}),
        ("patch", f"/api/prompt-sets/{prompt_set.pk}/", {"description": "d"}),
        ("post", "/api/prompt-sets/import/", {"project": project.pk, "name": "hub",
                                               "config": {"dataset_id": "org/set", "problem_column": "q",
                                                          "answer_column": "a"}}),
        ("post", "/api/prompts/", {"prompt_set": prompt_set.pk, "problem": "1+1?", "answer": "2"}),
        ("patch", f"/api/prompts/{prompt.pk}/", {"answer": "5"}),
        ("post", "/api/runs/", {"project": project.pk, "name": "r", "prompt_set": prompt_set.pk}),
        ("patch", f"/api/runs/{run.pk}/", {"name": "renamed"}),
        ("post", "/api/suites/", {"project": project.pk, "name": "s", "benchmarks": [{"benchmark": "gsm8k"}]}),
        ("patch", f"/api/suites/{suite.pk}/", {"description": "d"}),
        ("post", "/api/evaluations/", {"project": project.pk, "suite": suite.pk, "model": "tiny"}),
        ("post", "/api/variants/", {"project": project.pk, "name": "v", "parent_run": run.pk, "method": "dpo"}),
    ]


def test_every_writable_endpoint_refuses_an_unknown_field_listing_the_writable_ones(api_for, alice, write_routes):
    api = api_for(alice)
    for method, url, body in write_routes:
        response = getattr(api, method)(url, {**body, "made_up": 1}, format="json")
        assert response.status_code == 400, (method, url, response.content)
        assert list(response.json()) == ["made_up"], (method, url)
        reason = response.json()["made_up"][0]
        assert reason.startswith("unknown field; writable fields: ") and next(iter(body)) in reason, (method, url)


def test_the_same_bodies_without_the_unknown_field_are_accepted(api_for, alice, write_routes):
    api = api_for(alice)
    for method, url, body in write_routes:
        response = getattr(api, method)(url, body, format="json")
        assert response.status_code in (200, 201), (method, url, response.content)


def test_a_variant_with_config_instead_of_parameters_is_refused(api_for, project, run, alice):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "v", "parent_run": run.pk,
                                                     "method": "dpo", "config": {"beta": 0.3}}, format="json")
    assert response.status_code == 400
    assert "parameters" in response.json()["config"][0]
    assert not Long2ShortVariant.objects.exists()


def test_a_run_with_suite_instead_of_evaluation_suite_is_refused(api_for, project, prompt_set, suite, alice):
    response = api_for(alice).post("/api/runs/", {"project": project.pk, "name": "r", "prompt_set": prompt_set.pk,
                                                 "suite": suite.pk}, format="json")
    assert response.status_code == 400
    assert "evaluation_suite" in response.json()["suite"][0]
    assert not RLRun.objects.exists()


def test_a_read_only_field_that_would_change_is_refused(api_for, run, alice):
    response = api_for(alice).patch(f"/api/runs/{run.pk}/", {"status": "cancelled"}, format="json")
    assert response.status_code == 400
    assert response.json()["status"][0].startswith("read-only (set by the server); writable fields: ")
    run.refresh_from_db()
    assert run.status == "queued"


def test_moving_a_row_to_another_project_is_refused_naming_why(api_for, project, run, alice):
    from webapp.projects.models import Project

    other = Project.objects.create(name="Other", slug="other")
    other.add_member(alice)
    response = api_for(alice).patch(f"/api/runs/{run.pk}/", {"project": other.pk}, format="json")
    assert response.status_code == 400
    assert "rows do not move between projects" in response.json()["project"][0]


def test_a_get_body_sent_back_by_put_is_accepted(api_for, project, suite, alice):
    api = api_for(alice)
    evaluation = api.post("/api/evaluations/", {"project": project.pk, "suite": suite.pk, "model": "tiny"},
                          format="json").json()
    response = api.put(f"/api/evaluations/{evaluation['id']}/", {**evaluation, "seed": 7}, format="json")
    assert response.status_code == 200, response.json()
    assert EvalRun.objects.get().seed == 7


def test_a_created_row_cannot_set_read_only_fields(api_for, project, suite, alice):
    response = api_for(alice).post("/api/evaluations/", {"project": project.pk, "suite": suite.pk, "model": "tiny",
                                                        "status": "succeeded"}, format="json")
    assert response.status_code == 400 and "status" in response.json()
    assert not EvalRun.objects.exists()


def test_an_upload_refuses_an_unknown_field(api_for, prompt_set, alice):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.conftest import SAMPLE_JSONL

    upload = SimpleUploadedFile("more.jsonl", SAMPLE_JSONL)
    response = api_for(alice).post(f"/api/prompt-sets/{prompt_set.pk}/upload/", {"file": upload, "fromat": "csv"},
                                   format="multipart")
    assert response.status_code == 400 and "fromat" in response.json()
    assert prompt_set.prompts.count() == 2
