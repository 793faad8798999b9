"""POST /api/evaluations/{id}/audits/: a second grader for a succeeded evaluation; the judge and audit fields of
results and samples, and the filter of the samples an audit disagrees with."""

from __future__ import annotations

import pytest

from webapp.evals.models import BenchmarkResult, EvalRun, GraderAudit, SampleResult

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluation(project, suite, alice):
    return EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice, status="succeeded")


def audits_url(evaluation) -> str:
    return f"/api/evaluations/{evaluation.pk}/audits/"


def test_it_queues_an_audit_with_the_defaults_filled_in(api_for, alice, evaluation):
    response = api_for(alice).post(audits_url(evaluation), {"grader_mode": "rule_then_judge",
                                                            "judge_model": "Qwen/Qwen2.5-7B-Instruct"}, format="json")
    assert response.status_code == 201, response.json()
    audit = GraderAudit.objects.get()
    assert (audit.eval_run, audit.status, audit.owner) == (evaluation, "queued", alice)
    assert audit.grader == {"grader_mode": "rule_then_judge", "extraction_policy": "flexible",
                            "judge_model": "Qwen/Qwen2.5-7B-Instruct", "judge_max_tokens": 1024}
    assert audit.grader_label() == "rule_then_judge Qwen/Qwen2.5-7B-Instruct"
    listed = api_for(alice).get(audits_url(evaluation))
    assert [row["id"] for row in listed.json()] == [audit.pk]


@pytest.mark.parametrize("body, field", [
    ({"extraction_policy": "strict"}, "extraction_policy"),
    ({"grader_mode": "judge"}, "judge_model"),
    ({"judge_model": "tiny"}, "judge_model"),
    ({"grader_mode": "oracle"}, "grader_mode"),
    ({"judge_max_tokens": 0}, "judge_max_tokens"),
    ({"policy": "boxed"}, "policy"),
])
def test_it_refuses_a_bad_second_grader_naming_the_field(api_for, alice, evaluation, body, field):
    response = api_for(alice).post(audits_url(evaluation), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not GraderAudit.objects.exists()


@pytest.mark.parametrize("status", ["queued", "running", "failed"])
def test_it_refuses_an_evaluation_that_has_not_succeeded(api_for, alice, evaluation, status):
    EvalRun.objects.filter(pk=evaluation.pk).update(status=status)
    response = api_for(alice).post(audits_url(evaluation), {"extraction_policy": "boxed"}, format="json")
    assert response.status_code == 409
    assert f"is {status}: only a succeeded evaluation is audited" in response.json()["detail"]
    assert not GraderAudit.objects.exists()


def test_a_stranger_cannot_audit_or_list_audits(api_for, charlie, evaluation):
    assert api_for(charlie).post(audits_url(evaluation), {}, format="json").status_code == 404
    assert api_for(charlie).get(audits_url(evaluation)).status_code == 404


def test_samples_show_the_judge_and_the_audit_and_filter_the_disagreeing_ones(api_for, bob, evaluation):
    audit = GraderAudit.objects.create(eval_run=evaluation, grader={"grader_mode": "judge", "judge_model": "j"},
                                       status="succeeded")
    rows = [("p1", True, True), ("p2", True, False), ("p3", False, True), ("p4", False, None)]
    for problem_id, correct, audit_correct in rows:
        SampleResult.objects.create(eval_run=evaluation, benchmark="math500", problem_id=problem_id,
                                    response_tokens=10, correct=correct, audit_correct=audit_correct,
                                    extraction_policy="flexible", graded_by="judge", judge_verdict="correct",
                                    judge_reasoning="same value")
    BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=0.5, audit=audit,
                                   audit_samples=3, audit_disagreements=2,
                                   metrics={"extraction_policy": "flexible", "grader_mode": "judge"})
    api = api_for(bob)
    disagreeing = api.get("/api/samples/", {"eval_run": evaluation.pk, "audit_disagrees": "true"}).json()["results"]
    assert [row["problem_id"] for row in disagreeing] == ["p2", "p3"]
    agreeing = api.get("/api/samples/", {"eval_run": evaluation.pk, "audit_disagrees": "false"}).json()["results"]
    assert [row["problem_id"] for row in agreeing] == ["p1", "p4"]
    sample = agreeing[0]
    assert {key: sample[key] for key in ("extraction_policy", "graded_by", "judge_verdict", "judge_reasoning",
                                         "audit_correct", "audit_disagrees")} == {
        "extraction_policy": "flexible", "graded_by": "judge", "judge_verdict": "correct",
        "judge_reasoning": "same value", "audit_correct": True, "audit_disagrees": False}
    result = api.get("/api/benchmark-results/", {"eval_run": evaluation.pk}).json()["results"][0]
    assert (result["extraction_policy"], result["audit"], result["audit_disagreement_rate"]) == (
        "flexible", audit.pk, pytest.approx(2 / 3))
