"""Benchmark suites, evaluations and long2short variants: validation through the API."""

from __future__ import annotations

import pytest

from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.long2short.models import Long2ShortVariant

pytestmark = pytest.mark.django_db


def test_a_suite_keeps_its_order_and_fills_defaults(api_for, project, alice):
    benchmarks = [{"benchmark": "aime24", "samples_per_problem": 8, "max_tokens": 4096, "temperature": 0.6},
                  {"benchmark": "math500"}, {"benchmark": "lm-eval:mmlu"}]
    response = api_for(alice).post("/api/suites/", {"project": project.pk, "name": "report",
                                                   "benchmarks": benchmarks}, format="json")
    assert response.status_code == 201, response.json()
    stored = BenchmarkSuite.objects.get(pk=response.json()["id"]).benchmarks
    assert [entry["benchmark"] for entry in stored] == ["aime24", "math500", "lm-eval:mmlu"]
    assert stored[0]["samples_per_problem"] == 8 and stored[1]["samples_per_problem"] == 1


@pytest.mark.parametrize(
    "benchmarks, field",
    [
        ([], "benchmarks"),
        ([{"benchmark": "aime24"}, {"benchmark": "nope"}], "benchmarks[1].benchmark"),
        ([{"benchmark": "aime24", "samples_per_problem": 0}], "benchmarks[0].samples_per_problem"),
        ([{"benchmark": "math500", "temperature": -1}], "benchmarks[0].temperature"),
        ([{"benchmark": "math500"}, {"benchmark": "math500"}], "benchmarks[1].benchmark"),
        ([{"samples_per_problem": 2}], "benchmarks[0].benchmark"),
    ],
)
def test_an_invalid_suite_is_refused_naming_the_entry(api_for, project, alice, benchmarks, field):
    response = api_for(alice).post("/api/suites/", {"project": project.pk, "name": "bad",
                                                   "benchmarks": benchmarks}, format="json")
    assert response.status_code == 400
    assert field in response.json()["benchmarks"]
    assert not BenchmarkSuite.objects.filter(name="bad").exists()


def test_an_evaluation_needs_exactly_one_of_checkpoint_or_model(api_for, project, suite, alice):
    api = api_for(alice)
    neither = api.post("/api/evaluations/", {"project": project.pk, "suite": suite.pk}, format="json")
    assert neither.status_code == 400 and "checkpoint" in neither.json()
    created = api.post("/api/evaluations/", {"project": project.pk, "suite": suite.pk, "model": "tiny"},
                       format="json")
    assert created.status_code == 201
    assert EvalRun.objects.get().status == "queued"


def test_a_variant_resolves_its_method_parameters(api_for, project, run, alice):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "dpo", "parent_run": run.pk,
                                                     "method": "dpo", "parameters": {"beta": 0.2}}, format="json")
    assert response.status_code == 201, response.json()
    parameters = Long2ShortVariant.objects.get().parameters
    assert parameters["beta"] == 0.2 and parameters["long_correct_ratio"] == 1.5


def test_a_variant_with_a_bad_parameter_names_it(api_for, project, run, alice):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "dpo", "parent_run": run.pk,
                                                     "method": "dpo", "parameters": {"long_correct_ratio": 1.0}},
                                   format="json")
    assert response.status_code == 400
    assert "long_correct_ratio" in response.json()["parameters"]


def test_a_variant_needs_a_parent(api_for, project, alice):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "m", "method": "merge"},
                                   format="json")
    assert response.status_code == 400 and "parent_run" in response.json()
