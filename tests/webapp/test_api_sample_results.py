"""/api/samples/: the reference answer beside the extracted one; an unknown filter value is refused, not ignored."""

from __future__ import annotations

import pytest

from webapp.evals.models import EvalRun, SampleResult

pytestmark = pytest.mark.django_db


@pytest.fixture
def sample(project, suite):
    evaluation = EvalRun.objects.create(project=project, suite=suite, model="tiny", status="succeeded")
    return SampleResult.objects.create(eval_run=evaluation, benchmark="math500", problem_id="p1", response="so 7",
                                       response_tokens=3, correct=True, extracted_answer="7", reference_answer="7")


def test_a_sample_carries_its_reference_answer(api_for, bob, sample):
    rows = api_for(bob).get("/api/samples/", {"eval_run": sample.eval_run_id}).json()["results"]
    assert [(row["extracted_answer"], row["reference_answer"]) for row in rows] == [("7", "7")]


@pytest.mark.parametrize("parameter", ["correct", "audit_disagrees"])
def test_an_unknown_correctness_value_is_refused_naming_the_filter(api_for, alice, sample, parameter):
    response = api_for(alice).get("/api/samples/", {parameter: "maybe"})
    assert response.status_code == 400 and parameter in response.json()


@pytest.mark.parametrize("value, kept", [("true", [True]), ("True", [True]), ("1", [True]), ("false", [False]),
                                         ("0", [False]), ("", [False, True])])
def test_the_correctness_filter_still_takes_every_usual_spelling(api_for, alice, sample, value, kept):
    SampleResult.objects.create(eval_run=sample.eval_run, benchmark="math500", problem_id="p2", response="so 6",
                                response_tokens=3, correct=False, extracted_answer="6", reference_answer="7")
    response = api_for(alice).get("/api/samples/", {"eval_run": sample.eval_run_id, "correct": value})
    assert response.status_code == 200
    assert sorted(row["correct"] for row in response.json()["results"]) == kept
