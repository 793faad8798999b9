"""Query filters of the API: an id of another project's row reads as an id that does not exist (both a 400 naming
the parameter), and a whole-number filter refuses a fraction rather than truncating it."""

from __future__ import annotations

import pytest

from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import TrainingSample

pytestmark = pytest.mark.django_db

NO_SUCH_CHOICE = ["Select a valid choice. That choice is not one of the available choices."]


@pytest.fixture
def variant(project, run, alice):
    return Long2ShortVariant.objects.create(project=project, name="v", parent_run=run, method="dpo", owner=alice)


@pytest.mark.parametrize("url, parameter, row", [
    ("/api/iteration-metrics/", "run", "run"), ("/api/training-samples/", "run", "run"),
    ("/api/runs/", "project", "project"), ("/api/prompt-sets/", "project", "project"),
    ("/api/prompts/", "prompt_set", "prompt_set"), ("/api/evaluations/", "suite", "suite"),
    ("/api/variant-records/", "variant", "variant"), ("/api/variants/", "parent_run", "run"),
])
def test_another_projects_id_answers_as_an_id_that_does_not_exist(request, api_for, charlie, url, parameter, row):
    hidden = request.getfixturevalue(row).pk
    api = api_for(charlie)
    responses = [api.get(url, {parameter: hidden}), api.get(url, {parameter: 999_999})]
    assert [response.status_code for response in responses] == [400, 400]
    assert responses[0].json() == responses[1].json() == {parameter: NO_SUCH_CHOICE}


def test_a_member_still_filters_by_the_projects_ids(api_for, bob, run):
    TrainingSample.objects.create(run=run, iteration=1, prompt_id="1", problem="p", reward=1.0, correct=True,
                                  response_tokens=10)
    response = api_for(bob).get("/api/training-samples/", {"run": run.pk})
    assert response.status_code == 200 and response.json()["count"] == 1


@pytest.mark.parametrize("url, parameter, value", [
    ("/api/training-samples/", "iteration", "1.9"), ("/api/training-samples/", "min_tokens", "10.5"),
    ("/api/samples/", "max_tokens", "10.9"), ("/api/iteration-metrics/", "iteration_min", "1e30"),
    ("/api/iteration-metrics/", "iteration_max", "2.5"),
])
def test_a_fractional_whole_number_filter_is_refused_naming_it(api_for, alice, run, url, parameter, value):
    TrainingSample.objects.create(run=run, iteration=1, prompt_id="1", problem="p", reward=1.0, correct=True,
                                  response_tokens=10)
    response = api_for(alice).get(url, {parameter: value})
    assert response.status_code == 400
    assert response.json() == {parameter: ["Enter a whole number."]}
