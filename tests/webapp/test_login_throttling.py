"""Failed logins are throttled per username and per client address, on the login page and the token endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.db.models import F
from django.test import RequestFactory
from django.urls import reverse
from rest_framework.test import APIClient

from webapp.accounts.lockout import client_ip_address

pytestmark = pytest.mark.django_db

HOME = "10.0.0.1"  # the attacker's (or the forgetful user's) address
ELSEWHERE = "10.0.0.2"


def page_login(client, username, password, address=HOME):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address)


def token_login(username, password, address=HOME):
    return APIClient().post(reverse("api-token"), {"username": username, "password": password}, format="json",
                            REMOTE_ADDR=address)


def let_the_window_pass():
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=16))


def test_the_login_page_locks_out_after_five_failures(client, alice):
    answers = [page_login(client, "alice", "wrong") for _ in range(6)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 429, 429]
    assert b"correct username and password" in answers[0].content
    locked = answers[5]
    assert b"Too many failed logins" in locked.content and b"try again in 15 minutes" in locked.content.lower()
    assert b"correct username and password" not in locked.content
    assert b'name="password"' in locked.content  # the form is still there
    assert 880 <= int(locked["Retry-After"]) <= 900


def test_the_right_password_is_refused_until_the_window_passes(client, alice):
    for _ in range(6):
        page_login(client, "alice", "wrong")
    refused = page_login(client, "alice", "alice-password")
    assert refused.status_code == 429
    assert "_auth_user_id" not in client.session
    let_the_window_pass()
    response = page_login(client, "alice", "alice-password")
    assert response.status_code == 302 and response.url == reverse("home")


def test_a_reset_lifts_the_lockout_at_once(client, alice):
    for _ in range(5):
        page_login(client, "alice", "wrong")
    call_command("axes_reset_username", "alice")
    call_command("axes_reset_ip", HOME)
    assert page_login(client, "alice", "alice-password").status_code == 302


def test_another_user_elsewhere_is_not_affected(client, alice, bob):
    for _ in range(6):
        page_login(client, "alice", "wrong")
    response = page_login(client, "bob", "bob-password", address=ELSEWHERE)
    assert response.status_code == 302
    assert token_login("bob", "bob-password", address=ELSEWHERE).status_code == 200


def test_the_address_is_locked_out_for_every_username(client, alice, bob):
    for username in ("alice", "bob", "carol", "dave", "erin"):
        page_login(client, username, "wrong")
    assert page_login(client, "bob", "bob-password").status_code == 429
    assert page_login(client, "bob", "bob-password", address=ELSEWHERE).status_code == 302


def test_the_username_is_locked_out_from_every_address(client, alice):
    for number in range(5):
        page_login(client, "alice", "wrong", address=f"10.0.1.{number}")
    assert page_login(client, "alice", "alice-password", address=ELSEWHERE).status_code == 429


def test_the_token_endpoint_answers_429_with_retry_after(alice, bob):
    answers = [token_login("alice", "wrong") for _ in range(6)]
    assert [answer.status_code for answer in answers] == [400, 400, 400, 400, 429, 429]
    assert "Too many failed logins" in answers[5].json()["detail"]
    assert 880 <= int(answers[5]["Retry-After"]) <= 900
    assert token_login("alice", "alice-password").status_code == 429
    assert token_login("bob", "bob-password", address=ELSEWHERE).json()["token"]
    let_the_window_pass()
    assert token_login("alice", "alice-password").json()["token"]


def test_page_and_token_failures_count_together(client, alice):
    for _ in range(3):
        page_login(client, "alice", "wrong")
    for _ in range(2):
        token_login("alice", "wrong")
    assert page_login(client, "alice", "alice-password").status_code == 429


def test_the_limit_and_window_follow_the_settings(client, alice, settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = timedelta(minutes=1)
    assert [page_login(client, "alice", "wrong").status_code for _ in range(2)] == [200, 429]
    assert int(page_login(client, "alice", "alice-password")["Retry-After"]) <= 60


def test_the_environment_sets_the_limit_and_window(tmp_path):
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE']='webapp.settings'; django.setup(); "
            "from django.conf import settings as s; "
            "print(s.AXES_FAILURE_LIMIT, s.AXES_COOLOFF_TIME * 60, s.LOGIN_TRUSTED_PROXIES)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "MIRRORLAB_LOGIN_FAILURE_LIMIT": "8",
                                 "MIRRORLAB_LOGIN_COOLOFF_MINUTES": "30", "MIRRORLAB_TRUSTED_PROXIES": "1",
                                 "DATABASE_URL": "sqlite:////tmp/mirrorlab-import.sqlite3",
                                 "CELERY_BROKER_URL": "filesystem://", "MIRRORLAB_DATA_DIR": str(tmp_path)})
    assert output.stdout.split() == ["8", "30.0", "1"]


def test_behind_a_trusted_proxy_the_address_is_the_one_the_proxy_saw(settings):
    request = RequestFactory().get("/", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    settings.LOGIN_TRUSTED_PROXIES = 0
    assert client_ip_address(request) == "10.9.9.9"
    settings.LOGIN_TRUSTED_PROXIES = 1
    assert client_ip_address(request) == "203.0.113.7"  # "6.6.6.6" was the client's own claim
