"""Benchmark-suite pages: list and detail with the benchmarks in order."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.evals.models import BenchmarkSuite

pytestmark = pytest.mark.django_db

TWO_BENCHMARKS = [
    {"benchmark": "gsm8k", "samples_per_problem": 4, "max_tokens": 256, "temperature": 0.6, "top_p": 0.95, "limit": 50},
    {"benchmark": "aime24", "samples_per_problem": 16, "max_tokens": 4096, "temperature": 1.0, "top_p": 1.0,
     "limit": None},
]


@pytest.mark.parametrize("user_name", ["alice", "bob"])
def test_members_see_the_suite_page(client_for, request, suite, user_name):
    response = client_for(request.getfixturevalue(user_name)).get(reverse("suite-detail", kwargs={"pk": suite.pk}))
    assert response.status_code == 200
    assert b"math500" in response.content


def test_outsider_gets_404_on_suite_page(client_for, charlie, suite):
    assert client_for(charlie).get(reverse("suite-detail", kwargs={"pk": suite.pk})).status_code == 404


def test_suite_page_lists_benchmarks_in_order_with_their_settings(client_for, alice, project):
    suite = BenchmarkSuite.objects.create(project=project, name="olympiad", benchmarks=TWO_BENCHMARKS)
    content = client_for(alice).get(reverse("suite-detail", kwargs={"pk": suite.pk})).content.decode()
    assert content.index("<code>gsm8k</code>") < content.index("<code>aime24</code>")
    assert '<td class="num">4096</td>' in content
    assert '<td class="num">0.95</td>' in content
    assert '<td class="num">50</td>' in content
    assert '<td class="num">all</td>' in content


def test_suite_list_shows_the_current_projects_suites(client_for, bob, suite):
    content = client_for(bob).get(reverse("suite-list")).content.decode()
    assert reverse("suite-detail", kwargs={"pk": suite.pk}) in content


def test_suite_list_hides_suites_from_outsiders(client_for, charlie, suite):
    content = client_for(charlie).get(reverse("suite-list")).content.decode()
    assert reverse("suite-detail", kwargs={"pk": suite.pk}) not in content
