"""Login, logout, and the login wall in front of every page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.evals.models import EvalRun

pytestmark = pytest.mark.django_db

# (URL name, fixture giving the object whose pk the URL takes, or None)
PAGES = [
    ("home", None),
    ("prompt-set-list", None),
    ("prompt-set-upload", None),
    ("prompt-set-detail", "prompt_set"),
    ("run-list", None),
    ("run-launch", None),
    ("run-detail", "run"),
    ("run-status", "run"),
    ("suite-list", None),
    ("suite-detail", "suite"),
    ("evaluation-list", None),
    ("evaluation-detail", "evaluation"),
    ("evaluation-samples", "evaluation"),
]


@pytest.fixture
def evaluation(project, suite, alice):
    return EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice)


def page_url(request, url_name: str, target: str | None) -> str:
    kwargs = {"pk": request.getfixturevalue(target).pk} if target else {}
    return reverse(url_name, kwargs=kwargs)


@pytest.mark.parametrize("url_name, target", PAGES)
def test_anonymous_visitor_is_redirected_to_login(client, request, url_name, target):
    url = page_url(request, url_name, target)
    response = client.get(url)
    assert response.status_code == 302
    assert response.url == f"{reverse('login')}?next={url}"


@pytest.mark.parametrize("url_name", ["run-cancel", "evaluation-cancel"])
def test_anonymous_post_to_cancel_is_redirected_to_login(client, run, evaluation, url_name):
    target = run if url_name == "run-cancel" else evaluation
    response = client.post(reverse(url_name, kwargs={"pk": target.pk}))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))
    target.refresh_from_db()
    assert target.status == "queued"


def test_anonymous_switch_is_redirected_to_login(client, project):
    response = client.post(reverse("switch-project"), {"project": project.pk})
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_login_page_shows_the_form(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content
    assert b'name="password"' in response.content


def test_login_with_right_password_goes_home(client, alice):
    response = client.post(reverse("login"), {"username": "alice", "password": "alice-password"})
    assert response.status_code == 302
    assert response.url == reverse("home")
    assert client.get(reverse("home")).status_code == 200


def test_login_with_wrong_password_is_refused(client, alice):
    response = client.post(reverse("login"), {"username": "alice", "password": "wrong"})
    assert response.status_code == 200
    assert "_auth_user_id" not in client.session
    assert b"correct username and password" in response.content


def test_logout_by_post_ends_the_session(client_for, alice):
    client = client_for(alice)
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response.url == reverse("login")
    assert client.get(reverse("home")).status_code == 302
