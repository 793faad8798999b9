"""Home page: the current project's recent runs and evaluations, or a hint to ask for a project."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.evals.models import EvalRun

pytestmark = pytest.mark.django_db


def test_home_lists_recent_runs_and_evaluations_of_the_current_project(client_for, bob, run, suite, alice):
    evaluation = EvalRun.objects.create(project=run.project, suite=suite, model="tiny-baseline", owner=alice)
    response = client_for(bob).get(reverse("home"))
    assert response.status_code == 200
    content = response.content.decode()
    assert reverse("run-detail", kwargs={"pk": run.pk}) in content
    assert reverse("evaluation-detail", kwargs={"pk": evaluation.pk}) in content
    assert "tiny-baseline" in content


def test_home_offers_to_create_a_project_when_the_user_has_none(client_for, charlie, run):
    response = client_for(charlie).get(reverse("home"))
    assert response.status_code == 200
    content = response.content.decode()
    assert "Create a project" in content and "owner to add you" in " ".join(content.split())
    assert run.name not in content


def test_nav_links_admin_only_for_staff(client_for, alice, django_user_model, project):
    assert b'href="/admin/"' not in client_for(alice).get(reverse("home")).content
    staff = django_user_model.objects.create_user("dora", password="dora-password", is_staff=True)
    content = client_for(staff).get(reverse("home")).content.decode()
    assert 'href="/admin/"' in content
    assert 'href="/api/"' in content


def test_pages_use_the_own_stylesheet_and_no_cdn(client_for, alice, project):
    content = client_for(alice).get(reverse("home")).content.decode()
    assert 'href="/static/mirrorlab.css"' in content
    assert "https://" not in content
