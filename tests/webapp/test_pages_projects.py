"""Creating a project and adding members from the browser, as the REST API does (before, both were API-only and a
new user's home page could only say 'ask an administrator')."""

from __future__ import annotations

import pytest

from webapp.projects.context import SESSION_KEY
from webapp.projects.models import Membership, Project

pytestmark = pytest.mark.django_db


def test_a_user_without_a_project_is_offered_to_create_one(client_for, charlie):
    page = client_for(charlie).get("/").content.decode()
    assert 'href="/projects/new/"' in page and "Create a project" in page


def test_creating_a_project_makes_the_user_its_owner_and_switches_to_it(client_for, charlie):
    client = client_for(charlie)
    response = client.post("/projects/new/", {"name": "Long CoT ablations", "slug": "", "description": "fig 9"})
    project = Project.objects.get(name="Long CoT ablations")
    assert response.status_code == 302 and response["Location"] == f"/projects/{project.pk}/members/"
    assert project.slug == "long-cot-ablations" and project.description == "fig 9"
    assert list(project.memberships.values_list("user__username", "role")) == [("charlie", "owner")]
    assert client.session[SESSION_KEY] == project.pk
    again = client.post("/projects/new/", {"name": "Long CoT ablations"})
    assert Project.objects.get(pk=int(again["Location"].split("/")[2])).slug == "long-cot-ablations-2"


def test_a_taken_slug_is_refused_on_its_field(client_for, charlie, project):
    response = client_for(charlie).post("/projects/new/", {"name": "Other", "slug": project.slug})
    assert response.status_code == 200
    assert "project with this slug already exists" in response.context["form"].errors["slug"][0].lower()
    assert not Project.objects.filter(name="Other").exists()


def test_an_owner_adds_a_member_and_the_errors_name_the_field(client_for, alice, charlie, project):
    client = client_for(alice)  # alice owns `project`
    response = client.post(f"/projects/{project.pk}/members/", {"username": "charlie", "role": "member"})
    assert response.status_code == 302
    assert Membership.objects.get(project=project, user=charlie).role == "member"
    unknown = client.post(f"/projects/{project.pk}/members/", {"username": "dave", "role": "member"})
    assert unknown.context["form"].errors["username"] == ["no user named 'dave': an administrator creates accounts"]
    bad_role = client.post(f"/projects/{project.pk}/members/", {"username": "charlie", "role": "admin"})
    assert bad_role.context["form"].errors["role"] == ["admin is not a role: choose owner, member"]
    page = client.get(f"/projects/{project.pk}/members/").content.decode()
    assert "charlie" in page and "Add a member" in page


def test_a_member_sees_the_members_but_cannot_add_and_outsiders_get_404(client_for, bob, charlie, project):
    client = client_for(bob)  # bob is a plain member of `project`
    page = client.get(f"/projects/{project.pk}/members/").content.decode()
    assert "Only the project's owners add members" in page
    assert client.post(f"/projects/{project.pk}/members/", {"username": "charlie"}).status_code == 403
    assert not Membership.objects.filter(project=project, user=charlie).exists()
    assert client_for(charlie).get(f"/projects/{project.pk}/members/").status_code == 404


def test_the_api_makes_the_slug_from_the_name_and_names_the_roles(api_for, alice, charlie, project):
    api = api_for(charlie)
    created = api.post("/api/projects/", {"name": "Merging study"}, format="json")
    assert created.status_code == 201 and created.json()["slug"] == "merging-study"
    assert created.json()["memberships"][0]["role"] == "owner"
    refused = api_for(alice).post(f"/api/projects/{project.pk}/members/", {"username": "charlie", "role": "admin"},
                                  format="json")
    assert refused.status_code == 400 and refused.json()["role"] == ['"admin" is not a role: choose owner, member']


def test_the_only_owner_cannot_step_down_until_another_owner_exists(client_for, api_for, alice, bob, project):
    client = client_for(alice)  # alice is `project`'s only owner, bob a member
    refused = client.post(f"/projects/{project.pk}/members/", {"username": "alice", "role": "member"})
    assert refused.context["form"].errors["role"] == [
        "alice is the project's only owner: make another member owner first"]
    api = api_for(alice).post(f"/api/projects/{project.pk}/members/", {"username": "alice", "role": "member"},
                              format="json")
    assert api.status_code == 400 and "only owner" in api.json()["role"][0]
    client.post(f"/projects/{project.pk}/members/", {"username": "bob", "role": "owner"})
    assert client.post(f"/projects/{project.pk}/members/", {"username": "alice", "role": "member"}).status_code == 302
    assert dict(project.memberships.values_list("user__username", "role")) == {"alice": "member", "bob": "owner"}
