"""Benchmark suites, evaluations and long2short variants: validation through the API."""

from __future__ import annotations

import pytest

from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint, RLRun

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
    errors = response.json()
    assert list(errors) == [field] and isinstance(errors[field], list)  # one level: field -> reasons
    assert not BenchmarkSuite.objects.filter(name="bad").exists()


def test_an_evaluation_needs_exactly_one_of_checkpoint_or_model(api_for, project, suite, alice):
    from webapp.runs.models import Checkpoint

    api = api_for(alice)
    neither = api.post("/api/evaluations/", {"project": project.pk, "suite": suite.pk}, format="json")
    assert neither.status_code == 400
    assert neither.json()["checkpoint"] == ["give a checkpoint or a model to evaluate (a preset such as 'tiny', "
                                            "a local folder or a hub id)"]
    checkpoint = Checkpoint.objects.create(project=project, path="/tmp/outside")
    both = api.post("/api/evaluations/", {"project": project.pk, "suite": suite.pk, "checkpoint": checkpoint.pk,
                                          "model": "tiny"}, format="json")
    assert both.status_code == 400 and both.json()["checkpoint"] == ["give a checkpoint or a model, not both"]
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


def test_a_variant_refuses_a_parent_checkpoint_of_another_run_than_its_parent_run(api_for, project, run, alice):
    other_run = RLRun.objects.create(project=project, name="run-2", prompt_set=run.prompt_set, owner=alice,
                                     config=run.config, total_iterations=3)
    foreign = Checkpoint.objects.create(project=project, run=other_run, iteration=1, path="/checkpoints/run-2/1")
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "v", "parent_run": run.pk,
                                                     "parent_checkpoint": foreign.pk, "method": "dpo"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"parent_checkpoint": [f"Checkpoint {foreign.pk} is not one of run run-1's."]}
    assert not Long2ShortVariant.objects.exists()


def test_a_new_suite_with_a_taken_name_is_refused_on_name(api_for, project, suite, alice):
    response = api_for(alice).post("/api/suites/", {"project": project.pk, "name": "math",
                                                   "benchmarks": [{"benchmark": "gsm8k"}]}, format="json")
    assert response.status_code == 400
    assert response.json() == {"name": ["This project already has a benchmark suite named 'math'."]}
    assert BenchmarkSuite.objects.count() == 1


def test_renaming_a_suite_to_a_taken_name_is_refused_on_name(api_for, project, suite, alice):
    other = BenchmarkSuite.objects.create(project=project, name="other", benchmarks=suite.benchmarks)
    response = api_for(alice).patch(f"/api/suites/{other.pk}/", {"name": "math"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"name": ["This project already has a benchmark suite named 'math'."]}
    other.refresh_from_db()
    assert other.name == "other"


def used(suite, project, alice):
    EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice, status="succeeded")
    return suite


def test_the_benchmarks_of_a_used_suite_are_not_changed_in_place(api_for, project, suite, alice):
    used(suite, project, alice)
    before = list(suite.benchmarks)
    response = api_for(alice).patch(f"/api/suites/{suite.pk}/", {"benchmarks": [{"benchmark": "gsm8k"}]},
                                    format="json")
    assert response.status_code == 409
    assert response.json() == {"detail": "suite 'math' is used by 1 evaluation, so its benchmarks stay as they are "
                                         "and earlier scores stay comparable: create a new suite with your changes "
                                         "(POST /api/suites/)"}
    suite.refresh_from_db()
    assert suite.benchmarks == before


def test_a_used_suite_can_be_renamed_and_sent_back_unchanged(api_for, project, suite, alice):
    used(suite, project, alice)
    api = api_for(alice)
    renamed = api.patch(f"/api/suites/{suite.pk}/", {"name": "math (2024)", "description": "AIME protocol"},
                        format="json")
    assert renamed.status_code == 200, renamed.json()
    echoed = api.put(f"/api/suites/{suite.pk}/", renamed.json(), format="json")
    assert echoed.status_code == 200, echoed.json()
    suite.refresh_from_db()
    assert (suite.name, suite.description) == ("math (2024)", "AIME protocol")


def test_a_patch_of_an_unused_suite_keeps_the_settings_it_omits(api_for, suite, alice):
    response = api_for(alice).patch(f"/api/suites/{suite.pk}/", {"benchmarks": [
        {"benchmark": "math500", "limit": 50}, {"benchmark": "gsm8k"}]}, format="json")
    assert response.status_code == 200, response.json()
    suite.refresh_from_db()
    math, gsm8k = suite.benchmarks
    assert (math["limit"], math["max_tokens"]) == (50, 512)  # max_tokens stays as stored, not the default 1024
    assert gsm8k["max_tokens"] == 1024


def test_a_put_replaces_the_suite_with_defaults_for_what_it_omits(api_for, project, suite, alice):
    response = api_for(alice).put(f"/api/suites/{suite.pk}/", {"name": "math", "benchmarks": [
        {"benchmark": "math500", "limit": 50}]}, format="json")
    assert response.status_code == 200
    suite.refresh_from_db()
    assert suite.benchmarks[0]["max_tokens"] == 1024


def test_several_greedy_samples_per_problem_are_refused_naming_temperature(api_for, project, alice):
    response = api_for(alice).post("/api/suites/", {"project": project.pk, "name": "aime", "benchmarks": [
        {"benchmark": "aime24", "samples_per_problem": 8}]}, format="json")
    assert response.status_code == 400
    reason = response.json()["benchmarks[0].temperature"][0]
    assert reason.startswith("0 is greedy decoding, so the 8 samples per problem would be identical")
    assert not BenchmarkSuite.objects.filter(name="aime").exists()


def test_a_merge_with_nothing_to_merge_is_refused_at_creation(api_for, project, run, alice):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "m", "parent_run": run.pk,
                                                     "method": "merge"}, format="json")
    assert response.status_code == 400
    assert response.json() == {"parameters": {"other_checkpoint_ids": [
        "merge: give other_checkpoint_ids or other_run_iterations (the models merged with the parent)"]}}
    assert not Long2ShortVariant.objects.exists()


def test_a_merge_with_a_checkpoint_of_no_such_id_is_refused(api_for, project, run, alice):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "m", "parent_run": run.pk,
                                                     "method": "merge",
                                                     "parameters": {"other_checkpoint_ids": "999999"}},
                                   format="json")
    assert response.status_code == 400
    assert response.json()["parameters"]["other_checkpoint_ids"] == ["Checkpoint 999999 is not in this project."]


def test_a_merge_of_the_runs_warmup_checkpoint_is_accepted(api_for, project, run, alice):
    response = api_for(alice).post("/api/variants/", {"project": project.pk, "name": "m", "parent_run": run.pk,
                                                     "method": "merge", "parameters": {"other_run_iterations": "0"}},
                                   format="json")
    assert response.status_code == 201, response.json()


def test_a_patch_of_a_variants_parameters_keeps_the_ones_it_omits(api_for, project, run, alice):
    api = api_for(alice)
    created = api.post("/api/variants/", {"project": project.pk, "name": "dpo", "parent_run": run.pk,
                                          "method": "dpo", "parameters": {"beta": 0.2, "epochs": 3}}, format="json")
    response = api.patch(f"/api/variants/{created.json()['id']}/", {"parameters": {"beta": 0.4}}, format="json")
    assert response.status_code == 200, response.json()
    parameters = Long2ShortVariant.objects.get().parameters
    assert (parameters["beta"], parameters["epochs"]) == (0.4, 3)


def test_cancelling_a_cancelled_evaluation_answers_a_message(api_for, project, suite, alice):
    evaluation = EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice, status="cancelled")
    response = api_for(alice).post(f"/api/evaluations/{evaluation.pk}/cancel/")
    assert response.status_code == 409
    assert response.json() == {"detail": "nothing to cancel: this job already ended (cancelled); only a queued or "
                                         "running job can be cancelled"}
