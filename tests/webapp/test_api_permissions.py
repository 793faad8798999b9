"""Owner and member read and write; an outsider gets 404 on every object of the project."""

from __future__ import annotations

import pytest

from webapp.evals.models import BenchmarkResult, EvalRun, SampleResult
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint, IterationMetric

pytestmark = pytest.mark.django_db


@pytest.fixture
def every_object(project, prompt_set, suite, run, alice):
    """One row of every API-visible model, all in alice's project."""
    metric = IterationMetric.objects.create(run=run, iteration=1, train_accuracy=0.5, mean_response_length=10,
                                            p95_response_length=20)
    checkpoint = Checkpoint.objects.create(project=project, run=run, iteration=1, path="/tmp/ckpt")
    eval_run = EvalRun.objects.create(project=project, suite=suite, checkpoint=checkpoint, owner=alice)
    result = BenchmarkResult.objects.create(eval_run=eval_run, benchmark="math500", score=0.5)
    sample = SampleResult.objects.create(eval_run=eval_run, benchmark="math500", problem_id="p1",
                                         response_tokens=12, correct=True)
    variant = Long2ShortVariant.objects.create(project=project, name="merge", parent_run=run, method="merge",
                                               owner=alice)
    return {
        "projects": project, "prompt-sets": prompt_set, "prompts": prompt_set.prompts.first(), "runs": run,
        "iteration-metrics": metric, "checkpoints": checkpoint, "suites": suite, "evaluations": eval_run,
        "benchmark-results": result, "samples": sample, "variants": variant,
    }


@pytest.mark.parametrize("user_name", ["alice", "bob"])
def test_members_read_every_object(request, api_for, every_object, user_name):
    api = api_for(request.getfixturevalue(user_name))
    for route, row in every_object.items():
        response = api.get(f"/api/{route}/{row.pk}/")
        assert response.status_code == 200, route
        listing = api.get(f"/api/{route}/")
        assert row.pk in [item["id"] for item in listing.json()["results"]], route


def test_outsider_gets_404_on_every_object_and_empty_lists(api_for, every_object, charlie):
    api = api_for(charlie)
    for route, row in every_object.items():
        assert api.get(f"/api/{route}/{row.pk}/").status_code == 404, route
        assert api.get(f"/api/{route}/").json()["count"] == 0, route
    for route in ("runs", "evaluations", "variants"):
        assert api.post(f"/api/{route}/{every_object[route].pk}/cancel/").status_code == 404
    assert api.patch(f"/api/runs/{every_object['runs'].pk}/", {"name": "x"}, format="json").status_code == 404


def test_staff_sees_every_project(api_for, every_object, django_user_model):
    staff = django_user_model.objects.create_user("dora", is_staff=True)
    response = api_for(staff).get(f"/api/runs/{every_object['runs'].pk}/")
    assert response.status_code == 200


def test_anonymous_requests_are_refused(client, every_object):
    assert client.get("/api/runs/").status_code in (401, 403)


def test_outsider_cannot_create_into_a_foreign_project(api_for, project, prompt_set, charlie):
    response = api_for(charlie).post("/api/runs/", {"project": project.pk, "name": "sneaky",
                                                     "prompt_set": prompt_set.pk}, format="json")
    assert response.status_code == 400
    assert set(response.json()) >= {"project", "prompt_set"}


def test_member_writes_to_the_project(api_for, project, prompt_set, bob):
    response = api_for(bob).patch(f"/api/prompt-sets/{prompt_set.pk}/", {"description": "by bob"}, format="json")
    assert response.status_code == 200
    prompt_set.refresh_from_db()
    assert prompt_set.description == "by bob"


def test_token_authentication(client, alice, project):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=alice)
    response = client.get("/api/projects/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert [item["slug"] for item in response.json()["results"]] == ["reasoning"]


def test_only_owners_add_members(api_for, project, bob, charlie):
    refused = api_for(bob).post(f"/api/projects/{project.pk}/members/", {"username": "charlie"}, format="json")
    assert refused.status_code == 403
    assert not project.memberships.filter(user=charlie).exists()


def test_owner_adds_a_member_who_then_sees_the_project(api_for, project, alice, charlie):
    added = api_for(alice).post(f"/api/projects/{project.pk}/members/", {"username": "charlie"}, format="json")
    assert added.status_code == 200
    assert api_for(charlie).get(f"/api/projects/{project.pk}/").status_code == 200


def test_adding_a_member_answers_the_memberships_after_the_change(api_for, project, alice, charlie):
    response = api_for(alice).post(f"/api/projects/{project.pk}/members/", {"username": "charlie"}, format="json")
    assert response.status_code == 200
    assert sorted((member["username"], member["role"]) for member in response.json()["memberships"]) == \
        [("alice", "owner"), ("bob", "member"), ("charlie", "member")]
    assert project.memberships.filter(user=charlie, role="member").exists()


def test_creating_a_project_makes_the_creator_its_owner(api_for, charlie):
    response = api_for(charlie).post("/api/projects/", {"name": "Mine", "slug": "mine"}, format="json")
    assert response.status_code == 201
    assert response.json()["memberships"][0] == {**response.json()["memberships"][0], "username": "charlie",
                                                 "role": "owner"}
