"""The project switcher: stores a visible project in the session, 404 for any other."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.projects.context import SESSION_KEY
from webapp.projects.models import Project
from webapp.runs.models import RLRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def second_project(alice, bob):
    project = Project.objects.create(name="Vision", slug="vision")
    project.add_member(alice, role="owner")
    project.add_member(bob)
    return project


@pytest.mark.parametrize("user_name", ["alice", "bob"])
def test_member_switches_project_and_session_keeps_it(client_for, request, project, second_project, user_name):
    client = client_for(request.getfixturevalue(user_name))
    response = client.post(reverse("switch-project"), {"project": second_project.pk, "next": reverse("run-list")})
    assert response.status_code == 302
    assert response.url == reverse("run-list")
    assert client.session[SESSION_KEY] == second_project.pk


def test_outsider_gets_404_on_switching_to_a_project_they_cannot_see(client_for, charlie, project):
    client = client_for(charlie)
    response = client.post(reverse("switch-project"), {"project": project.pk})
    assert response.status_code == 404
    assert SESSION_KEY not in client.session


@pytest.mark.parametrize("chosen", ["999999", "not-a-number", ""])
def test_switching_to_an_unknown_project_gives_404(client_for, alice, project, chosen):
    response = client_for(alice).post(reverse("switch-project"), {"project": chosen})
    assert response.status_code == 404


def test_staff_may_switch_to_any_project(client_for, django_user_model, project):
    staff = django_user_model.objects.create_user("dora", password="dora-password", is_staff=True)
    client = client_for(staff)
    response = client.post(reverse("switch-project"), {"project": project.pk})
    assert response.status_code == 302
    assert client.session[SESSION_KEY] == project.pk


def test_switcher_refuses_get(client_for, alice, project):
    response = client_for(alice).get(reverse("switch-project"), {"project": project.pk})
    assert response.status_code == 405


def test_switcher_does_not_redirect_off_site(client_for, alice, project):
    response = client_for(alice).post(
        reverse("switch-project"), {"project": project.pk, "next": "https://evil.example.com/"}
    )
    assert response.status_code == 302
    assert response.url == reverse("home")


def test_lists_show_the_switched_project(client_for, alice, project, second_project, run):
    other_run = RLRun.objects.create(project=second_project, name="vision-run", prompt_set=run.prompt_set,
                                     config=run.config, owner=alice, total_iterations=3)
    client = client_for(alice)
    client.post(reverse("switch-project"), {"project": second_project.pk})
    content = client.get(reverse("run-list")).content.decode()
    assert other_run.name in content
    assert run.name not in content
    client.post(reverse("switch-project"), {"project": project.pk})
    content = client.get(reverse("run-list")).content.decode()
    assert run.name in content
    assert other_run.name not in content


def test_switcher_offers_only_visible_projects(client_for, alice, charlie, project):
    Project.objects.create(name="Secret", slug="secret").add_member(charlie)
    content = client_for(alice).get(reverse("home")).content.decode()
    assert f'<option value="{project.pk}" selected>Reasoning</option>' in content
    assert "Secret" not in content
