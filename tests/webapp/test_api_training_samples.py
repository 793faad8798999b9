"""GET /api/training-samples/: the trained responses, read-only, filterable, project-scoped."""

from __future__ import annotations

import pytest

from webapp.runs.models import TrainingSample

pytestmark = pytest.mark.django_db
URL = "/api/training-samples/"


@pytest.fixture
def samples(run):
    rows = [TrainingSample(run=run, iteration=iteration, prompt_id="7", problem="1+2", sample_index=index,
                           response="3" * tokens, reward=1.0 if correct else 0.0, correct=correct,
                           response_tokens=tokens, truncated=tokens >= 30)
            for iteration, index, tokens, correct in [(1, 0, 5, True), (1, 1, 30, False), (2, 0, 12, True)]]
    return TrainingSample.objects.bulk_create(rows)


def ids(response) -> list[tuple[int, int]]:
    assert response.status_code == 200, response.content
    return sorted((row["iteration"], row["response_tokens"]) for row in response.json()["results"])


def test_it_filters_by_iteration_correctness_and_length(api_for, alice, run, samples):
    api = api_for(alice)
    assert ids(api.get(URL, {"run": run.pk})) == [(1, 5), (1, 30), (2, 12)]
    assert ids(api.get(URL, {"run": run.pk, "iteration": 1})) == [(1, 5), (1, 30)]
    assert ids(api.get(URL, {"run": run.pk, "correct": "false"})) == [(1, 30)]
    assert ids(api.get(URL, {"run": run.pk, "min_tokens": 6, "max_tokens": 29})) == [(2, 12)]
    assert ids(api.get(URL, {"truncated": "true"})) == [(1, 30)]


def test_outsiders_see_no_samples_and_nobody_writes_them(api_for, bob, charlie, run, samples):
    assert ids(api_for(charlie).get(URL)) == []
    assert api_for(charlie).get(f"{URL}{samples[0].pk}/").status_code == 404
    assert api_for(bob).get(f"{URL}{samples[0].pk}/").json()["reward"] == 1.0
    assert api_for(bob).post(URL, {"run": run.pk}).status_code == 405
    assert TrainingSample.objects.count() == 3
