"""A grader audit run by a real Celery worker: a finished evaluation's stored responses graded again with the
boxed extraction policy against the flexible one it was scored with, and the disagreements counted exactly."""

from __future__ import annotations

import csv
import io

import pytest

from evaluation.benchmarks import SYNTHETIC_SEED
from training.tasks.arithmetic import generate
from webapp.evals.models import BenchmarkResult, BenchmarkSuite, GraderAudit, SampleResult
from webapp.evals.services import launch_evaluation
from webapp.jobs import JobStatus
from tests.workers.conftest import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def finished(job) -> str:
    job.refresh_from_db()
    return job.status if job.is_terminal else ""


def responses_where_the_policies_differ(answers: dict[str, str]) -> dict[str, tuple[str, bool]]:
    """Per problem: a response and its verdict under the flexible policy. Answer lines count only there."""
    first, second, third, fourth, fifth = sorted(answers)
    return {
        first: (f"so \\boxed{{{answers[first]}}}", True),  # both policies: correct
        second: (f"Answer: {answers[second]}", True),  # boxed finds no answer: disagree
        third: ("Answer: 99999", False),  # flexible wrong, boxed no answer: agree (both wrong)
        fourth: (f"The answer is {answers[fourth]}.", True),  # disagree
        fifth: (f"Answer: {answers[fifth]}\nfinal: \\boxed{{99999}}", False),  # the box wins in both: agree
    }


def test_an_audit_with_the_boxed_policy_counts_the_samples_it_grades_otherwise(
        celery_worker_process, project, alice, charlie, api_for, client_for):
    suite = BenchmarkSuite.objects.create(project=project, name="audit", benchmarks=[
        {"benchmark": "synthetic-arithmetic", "limit": 5, "max_tokens": 6}])
    eval_run = launch_evaluation(project=project, suite=suite, model="tiny", owner=alice)
    api = api_for(alice)
    assert wait_for(lambda: finished(eval_run), 240, "the evaluation to finish") == JobStatus.SUCCEEDED, \
        eval_run.traceback
    assert set(SampleResult.objects.filter(eval_run=eval_run).values_list("extraction_policy", flat=True)) == {
        "flexible"}
    result = BenchmarkResult.objects.get(eval_run=eval_run)
    assert result.metrics["extraction_policy"] == "flexible" and result.metrics["grader_mode"] == "rule"

    # The untrained tiny model rarely writes an answer, so the stored responses are replaced by ones where the
    # two policies differ, with their verdict under the flexible policy the evaluation used.
    answers = {problem.problem_id: problem.answer for problem in generate(5, seed=SYNTHETIC_SEED, split="held_out")}
    written = responses_where_the_policies_differ(answers)
    for problem_id, (response, correct) in written.items():
        SampleResult.objects.filter(eval_run=eval_run, problem_id=problem_id).update(
            response=response, correct=correct, truncated=False)  # finished responses: the policy leaves them be

    refused = api.post(f"/api/evaluations/{eval_run.pk}/audits/", {"extraction_policy": "tight"}, format="json")
    assert refused.status_code == 400 and "extraction_policy" in refused.json()
    assert api_for(charlie).post(f"/api/evaluations/{eval_run.pk}/audits/", {"extraction_policy": "boxed"},
                                 format="json").status_code == 404
    created = api.post(f"/api/evaluations/{eval_run.pk}/audits/", {"extraction_policy": "boxed"}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["grader"] == {"grader_mode": "rule", "extraction_policy": "boxed", "judge_model": None,
                                        "judge_max_tokens": 1024}
    audit = GraderAudit.objects.get(pk=created.json()["id"])
    assert wait_for(lambda: finished(audit), 120, "the audit to finish") == JobStatus.SUCCEEDED, audit.traceback

    first, second, third, fourth, fifth = sorted(answers)
    samples = {sample.problem_id: sample for sample in SampleResult.objects.filter(eval_run=eval_run)}
    assert {problem_id: sample.audit_correct for problem_id, sample in samples.items()} == {
        first: True, second: False, third: False, fourth: False, fifth: False}
    assert {problem_id: sample.correct for problem_id, sample in samples.items()} == {
        problem_id: correct for problem_id, (_, correct) in written.items()}  # the first verdict is kept
    assert samples[first].audit_answer == answers[first] and samples[second].audit_answer == ""
    result.refresh_from_db()
    assert (result.audit_id, result.audit_samples, result.audit_disagreements) == (audit.pk, 5, 2)
    assert result.audit_disagreement_rate == pytest.approx(0.4)
    assert audit.summary == {"synthetic-arithmetic": {"samples": 5, "disagreements": 2, "disagreement_rate": 0.4,
                                                      "judge_errors": 0}}

    listed = api.get("/api/samples/", {"eval_run": eval_run.pk, "audit_disagrees": "true"}).json()
    assert sorted(row["problem_id"] for row in listed["results"]) == [second, fourth]
    assert all(row["audit_disagrees"] and row["correct"] and not row["audit_correct"] for row in listed["results"])
    scored = api.get("/api/benchmark-results/", {"eval_run": eval_run.pk}).json()["results"][0]
    assert (scored["extraction_policy"], scored["audit_samples"], scored["audit_disagreements"],
            scored["audit_disagreement_rate"]) == ("flexible", 5, 2, pytest.approx(0.4))
    assert api.get(f"/api/evaluations/{eval_run.pk}/audits/").json()[0]["summary"] == audit.summary

    table = api.get("/api/benchmark-tables/", {"evaluations": eval_run.pk, "format": "csv"})
    header, row = list(csv.reader(io.StringIO(table.content.decode())))
    values = dict(zip(header, row))
    assert (values["synthetic-arithmetic extraction_policy"], values["synthetic-arithmetic audit_disagreement"]) \
        == ("flexible", "40.0")
    cell = api.get("/api/benchmark-tables/", {"evaluations": eval_run.pk}).json()["rows"][0]["cells"][
        "synthetic-arithmetic"]
    assert (cell["audit_samples"], cell["audit_disagreements"], cell["audit_disagreement"]) == (5, 2, 40.0)

    page = client_for(alice).get(f"/evaluations/{eval_run.pk}/").content.decode()
    assert "Grader audits" in page and "rule, boxed extraction" in page and "2 of 5" in page
    assert f"/evaluations/{eval_run.pk}/samples/?benchmark=synthetic-arithmetic&amp;audit=disagree" in page
    disagreeing = client_for(alice).get(f"/evaluations/{eval_run.pk}/samples/?audit=disagree").content.decode()
    assert disagreeing.count("disagrees</span>") == 2


def test_the_tiny_model_as_judge_grades_through_the_worker_and_its_errors_never_pass(
        celery_worker_process, project, alice, api_for):
    suite = BenchmarkSuite.objects.create(project=project, name="judged", benchmarks=[
        {"benchmark": "synthetic-arithmetic", "limit": 3, "max_tokens": 6, "grader_mode": "rule_then_judge",
         "judge_model": "tiny", "judge_max_tokens": 8}])
    eval_run = launch_evaluation(project=project, suite=suite, model="tiny", owner=alice)
    assert wait_for(lambda: finished(eval_run), 240, "the evaluation to finish") == JobStatus.SUCCEEDED, \
        eval_run.traceback
    samples = list(SampleResult.objects.filter(eval_run=eval_run))
    judged = [sample for sample in samples if sample.graded_by == "judge"]
    assert all(sample.judge_verdict == "error" and not sample.correct and sample.judge_reasoning
               for sample in judged)  # the untrained judge writes no valid verdict
    assert all(sample.graded_by == "rule" and sample.judge_verdict == "" for sample in samples if sample not in judged)
    metrics = BenchmarkResult.objects.get(eval_run=eval_run).metrics
    assert (metrics["grader_mode"], metrics["judge_model"]) == ("rule_then_judge", "tiny")
    assert metrics["judged_samples"] == metrics["judge_errors"] == len(judged)

    # Rule against judge: the judge's errors disagree with every sample the rule passed.
    SampleResult.objects.filter(eval_run=eval_run, problem_id=samples[0].problem_id).update(correct=True)
    created = api_for(alice).post(f"/api/evaluations/{eval_run.pk}/audits/",
                                  {"grader_mode": "judge", "judge_model": "tiny", "judge_max_tokens": 8},
                                  format="json")
    assert created.status_code == 201, created.json()
    audit = GraderAudit.objects.get(pk=created.json()["id"])
    assert wait_for(lambda: finished(audit), 240, "the audit to finish") == JobStatus.SUCCEEDED, audit.traceback
    passed = SampleResult.objects.filter(eval_run=eval_run, correct=True).count()
    assert audit.summary["synthetic-arithmetic"] == {"samples": 3, "disagreements": passed,
                                                     "disagreement_rate": passed / 3, "judge_errors": 3}
    assert not SampleResult.objects.filter(eval_run=eval_run, audit_correct=True).exists()
