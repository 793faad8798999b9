"""The run's sample browser: filters by correctness, iteration and length; paginated; members only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.runs.models import TrainingSample

pytestmark = pytest.mark.django_db


@pytest.fixture
def samples(run):
    """Iterations 1-3, four samples each: lengths 10, 20, 30, 40 plus the iteration; even indexes correct."""
    TrainingSample.objects.bulk_create(
        TrainingSample(run=run, iteration=iteration, prompt_id=str(index), problem=f"problem {index}",
                       sample_index=index, response=f"answer {iteration}-{index}",
                       reward=1.0 if index % 2 == 0 else 0.0, correct=index % 2 == 0,
                       response_tokens=10 * (index + 1) + iteration,
                       truncated=index == 3, repeated=index == 1)
        for iteration in (1, 2, 3) for index in range(4)
    )
    return run


def browse(client, run, **filters):
    response = client.get(reverse("run-samples", kwargs={"pk": run.pk}), filters)
    assert response.status_code == 200
    return response, [(sample.iteration, sample.sample_index) for sample in response.context["page"]]


def test_it_lists_the_newest_iteration_first(client_for, bob, samples):
    response, rows = browse(client_for(bob), samples)
    assert rows == [(3, 0), (3, 1), (3, 2), (3, 3), (2, 0), (2, 1), (2, 2), (2, 3), (1, 0), (1, 1), (1, 2), (1, 3)]
    content = response.content.decode()
    assert "answer 3-0" in content and "problem 2" in content
    assert '<span class="tag warn" title="hit max_response_tokens">truncated</span>' in content
    assert '<span class="tag warn" title="ended by repeat detection">repeated</span>' in content


def test_it_filters_correct_and_incorrect(client_for, alice, samples):
    assert browse(client_for(alice), samples, correct="yes")[1] == [(3, 0), (3, 2), (2, 0), (2, 2), (1, 0), (1, 2)]
    assert browse(client_for(alice), samples, correct="no")[1] == [(3, 1), (3, 3), (2, 1), (2, 3), (1, 1), (1, 3)]


def test_it_filters_by_iteration_and_length_range(client_for, alice, samples):
    assert browse(client_for(alice), samples, iteration=2)[1] == [(2, 0), (2, 1), (2, 2), (2, 3)]
    # lengths: iteration 1 -> 11 21 31 41, 2 -> 12 22 32 42, 3 -> 13 23 33 43
    assert browse(client_for(alice), samples, min_tokens=22, max_tokens=32)[1] == [(3, 1), (2, 1), (2, 2), (1, 2)]
    assert browse(client_for(alice), samples, correct="no", min_tokens=40)[1] == [(3, 3), (2, 3), (1, 3)]


def test_an_invalid_filter_is_reported_and_ignored(client_for, alice, samples):
    response, rows = browse(client_for(alice), samples, min_tokens=30, max_tokens=20, iteration="two")
    assert response.context["form"].errors == {"iteration": ["Enter a whole number."],
                                               "max_tokens": ["must not be below min length"]}
    assert "Max length: must not be below min length (filter ignored)" in response.content.decode()
    assert rows == [(3, 2), (3, 3), (2, 2), (2, 3), (1, 2), (1, 3)]  # only min_tokens=30 applies


def test_it_pages_25_rows_at_a_time(client_for, alice, run):
    TrainingSample.objects.bulk_create(
        TrainingSample(run=run, iteration=1, prompt_id="1", problem="p", sample_index=i, response="r", reward=0.0,
                       correct=False, response_tokens=5) for i in range(60))
    response, rows = browse(client_for(alice), run, page=3)
    assert len(rows) == 10 and response.context["page"].paginator.count == 60


def test_outsider_gets_404_on_the_sample_browser(client_for, charlie, samples):
    assert client_for(charlie).get(reverse("run-samples", kwargs={"pk": samples.pk})).status_code == 404


def test_the_run_page_links_the_sample_browser(client_for, alice, run):
    content = client_for(alice).get(reverse("run-detail", kwargs={"pk": run.pk})).content.decode()
    assert f'href="{reverse("run-samples", kwargs={"pk": run.pk})}"' in content
