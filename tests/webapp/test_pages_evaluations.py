"""Evaluation pages: list, per-benchmark results, per-sample rows and cancel."""

from __future__ import annotations

import pytest
from django.urls import reverse

from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun, SampleResult
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluation(project, suite, alice):
    return EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice)


@pytest.fixture
def scored_evaluation(project, alice):
    suite = BenchmarkSuite.objects.create(project=project, name="ordered", benchmarks=[
        {"benchmark": "math500"}, {"benchmark": "aime24"}])
    evaluation = EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice, status="succeeded")
    BenchmarkResult.objects.create(eval_run=evaluation, benchmark="aime24", score=0.1, ci_low=0.05, ci_high=0.2,
                                   mean_response_tokens=900.5, num_problems=30, samples_per_problem=4)
    BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=0.625, ci_low=0.58, ci_high=0.67,
                                   mean_response_tokens=412.24, num_problems=500, samples_per_problem=1,
                                   metrics={"pass@4": 0.8})
    return evaluation


def add_samples(evaluation, benchmark: str, count: int, correct_every: int = 2) -> None:
    SampleResult.objects.bulk_create(
        SampleResult(eval_run=evaluation, benchmark=benchmark, problem_id=f"{benchmark}-{i:04d}",
                     response=f"answer {i}",
                     response_tokens=10 + i, correct=i % correct_every == 0)
        for i in range(count)
    )


def page(name: str, evaluation) -> str:
    return reverse(name, kwargs={"pk": evaluation.pk})


@pytest.mark.parametrize("user_name", ["alice", "bob"])
@pytest.mark.parametrize("url_name", ["evaluation-detail", "evaluation-samples"])
def test_members_see_the_evaluation_pages(client_for, request, evaluation, user_name, url_name):
    assert client_for(request.getfixturevalue(user_name)).get(page(url_name, evaluation)).status_code == 200


@pytest.mark.parametrize("url_name", ["evaluation-detail", "evaluation-samples"])
def test_outsider_gets_404_on_evaluation_pages(client_for, charlie, evaluation, url_name):
    assert client_for(charlie).get(page(url_name, evaluation)).status_code == 404


def test_evaluation_page_shows_results_in_suite_order_with_score_ci_and_tokens(client_for, bob, scored_evaluation):
    response = client_for(bob).get(page("evaluation-detail", scored_evaluation))
    assert [result.benchmark for result in response.context["results"]] == ["math500", "aime24"]
    content = response.content.decode()
    assert content.index("<code>math500</code>") < content.index("<code>aime24</code>")
    assert "62.5%" in content
    assert "58.0% – 67.0%" in content
    assert "412.2" in content
    assert "<code>pass@4</code> 0.800" in content
    assert f'{page("evaluation-samples", scored_evaluation)}?benchmark=math500' in content


def test_evaluation_page_shows_an_lm_eval_metric_on_its_own_scale_as_it_is(client_for, bob, scored_evaluation):
    BenchmarkResult.objects.create(eval_run=scored_evaluation, benchmark="lm-eval:truthfulqa_gen", score=25.62,
                                   ci_low=20.61, ci_high=30.6, num_problems=2, metrics={
                                       "score_scale": "raw", "main_metric": "bleu_max,none"})
    content = client_for(bob).get(page("evaluation-detail", scored_evaluation)).content.decode()
    assert "25.6 bleu_max" in content and "20.6 bleu_max – 30.6 bleu_max" in content
    assert "2562" not in content and "62.5%" in content  # a fraction stays a percent


def test_evaluation_page_links_the_checkpoints_run(client_for, alice, run, suite):
    checkpoint = Checkpoint.objects.create(project=run.project, run=run, iteration=3, path="/tmp/ckpt")
    evaluation = EvalRun.objects.create(project=run.project, suite=suite, checkpoint=checkpoint, owner=alice)
    content = client_for(alice).get(page("evaluation-detail", evaluation)).content.decode()
    assert reverse("run-detail", kwargs={"pk": run.pk}) in content


def test_samples_page_filters_by_benchmark_and_correctness(client_for, alice, scored_evaluation):
    add_samples(scored_evaluation, "math500", 10)
    add_samples(scored_evaluation, "aime24", 4)
    client = client_for(alice)
    only_math = client.get(page("evaluation-samples", scored_evaluation), {"benchmark": "math500"})
    assert {sample.benchmark for sample in only_math.context["page"]} == {"math500"}
    assert only_math.context["page"].paginator.count == 10
    wrong_math = client.get(page("evaluation-samples", scored_evaluation), {"benchmark": "math500", "correct": "no"})
    assert wrong_math.context["page"].paginator.count == 5
    assert not any(sample.correct for sample in wrong_math.context["page"])


def test_samples_page_paginates_and_keeps_the_filter_in_page_links(client_for, alice, scored_evaluation):
    add_samples(scored_evaluation, "math500", 120)
    response = client_for(alice).get(page("evaluation-samples", scored_evaluation), {"benchmark": "math500"})
    assert len(response.context["page"].object_list) == 50
    assert b"?benchmark=math500&amp;page=2" in response.content


def test_evaluation_pages_use_a_bounded_number_of_queries(client_for, alice, project, scored_evaluation,
                                                          django_assert_max_num_queries):
    for index in range(40):
        EvalRun.objects.create(project=project, suite=scored_evaluation.suite, model=f"model-{index}", owner=alice)
    add_samples(scored_evaluation, "math500", 200)
    client = client_for(alice)
    with django_assert_max_num_queries(10):
        assert client.get(reverse("evaluation-list")).status_code == 200
    with django_assert_max_num_queries(10):
        assert client.get(page("evaluation-detail", scored_evaluation)).status_code == 200
    with django_assert_max_num_queries(12):
        assert client.get(page("evaluation-samples", scored_evaluation)).status_code == 200


def test_member_cancels_a_queued_evaluation(client_for, bob, evaluation):
    response = client_for(bob).post(page("evaluation-cancel", evaluation))
    assert response.status_code == 302
    evaluation.refresh_from_db()
    assert evaluation.status == "cancelled"


def test_outsider_gets_404_on_evaluation_cancel(client_for, charlie, evaluation):
    assert client_for(charlie).post(page("evaluation-cancel", evaluation)).status_code == 404
    evaluation.refresh_from_db()
    assert evaluation.status == "queued"


def test_evaluation_list_shows_the_current_projects_evaluations(client_for, bob, evaluation):
    content = client_for(bob).get(reverse("evaluation-list")).content.decode()
    assert page("evaluation-detail", evaluation) in content


def test_evaluation_page_shows_how_each_benchmark_was_graded_and_its_audit(client_for, bob, scored_evaluation):
    from webapp.evals.models import GraderAudit

    audit = GraderAudit.objects.create(eval_run=scored_evaluation, status="succeeded",
                                       grader={"grader_mode": "rule", "extraction_policy": "boxed"},
                                       summary={"math500": {"samples": 500, "disagreements": 25,
                                                            "disagreement_rate": 0.05, "judge_errors": 0}})
    BenchmarkResult.objects.filter(eval_run=scored_evaluation, benchmark="math500").update(
        audit=audit, audit_samples=500, audit_disagreements=25,
        metrics={"pass@4": 0.8, "extraction_policy": "flexible", "grader_mode": "rule_then_judge",
                 "judge_model": "Qwen/Qwen2.5-7B-Instruct", "judged_samples": 40, "judge_errors": 3})
    content = client_for(bob).get(page("evaluation-detail", scored_evaluation)).content.decode()
    assert "<code>extraction</code> flexible" in content and "<code>grader</code> rule_then_judge" in content
    assert "<code>judge errors</code> 3 of 40" in content and "Qwen/Qwen2.5-7B-Instruct" in content
    assert "<code>judge_model</code>" not in content  # grading settings are not listed again as metrics
    assert "5.0%" in content and "(25 of 500)" in content and "benchmark=math500&amp;audit=disagree" in content
    assert "Grader audits" in content and "rule, boxed extraction" in content and "25 of 500" in content


def test_samples_page_shows_the_judge_verdict_and_the_audit(client_for, bob, evaluation):
    SampleResult.objects.create(eval_run=evaluation, benchmark="math500", problem_id="p1", response="x",
                                response_tokens=3, correct=True, graded_by="judge", judge_verdict="correct",
                                judge_reasoning="it is the same fraction", audit_correct=False, audit_answer="1/2")
    content = client_for(bob).get(page("evaluation-samples", evaluation)).content.decode()
    assert "judge: correct" in content and "it is the same fraction" in content
    assert "disagrees" in content and "<code>1/2</code>" in content


def test_samples_page_lists_only_the_disagreeing_samples_when_asked(client_for, bob, evaluation):
    for index, (correct, audit_correct) in enumerate([(True, False), (True, True), (False, None), (False, True)]):
        SampleResult.objects.create(eval_run=evaluation, benchmark="math500", problem_id=f"p{index}",
                                    response=f"response {index}", response_tokens=3, correct=correct,
                                    audit_correct=audit_correct)
    url = page("evaluation-samples", evaluation)
    everything = client_for(bob).get(url).content.decode()
    disagreeing = client_for(bob).get(url + "?audit=disagree").content.decode()
    assert all(f"response {index}" in everything for index in range(4))
    assert [f"response {index}" in disagreeing for index in range(4)] == [True, False, False, True]


def test_other_metrics_show_numbers_formatted_strings_as_is_and_settings_as_pairs(client_for, alice,
                                                                                  scored_evaluation):
    BenchmarkResult.objects.filter(eval_run=scored_evaluation, benchmark="math500").update(metrics={
        "pass@4": 0.8, "maj@4": 3, "runner": "builtin",
        "sampling": {"temperature": 0.6, "max_tokens": 512, "seed": 0}})
    content = client_for(alice).get(page("evaluation-detail", scored_evaluation)).content.decode()
    row = content[content.index("<code>math500</code>"):]
    row = row[:row.index("</tr>")]
    for shown in ("<code>pass@4</code> 0.800", "<code>maj@4</code> 3", "<code>runner</code> builtin"):
        assert shown in row, row
    settings = row[row.index("<code>sampling</code> "):].split("</span>")[0].removeprefix("<code>sampling</code> ")
    assert sorted(settings.split(", ")) == ["max_tokens=512", "seed=0", "temperature=0.6"]  # stored order: jsonb's


@pytest.mark.parametrize("query, field", [({"correct": "maybe"}, "Correct"), ({"audit": "agree"}, "Audit")])
def test_samples_page_says_an_unknown_filter_value_is_ignored(client_for, alice, scored_evaluation, query, field):
    add_samples(scored_evaluation, "math500", 4)
    response = client_for(alice).get(page("evaluation-samples", scored_evaluation), query)
    content = response.content.decode()
    assert response.status_code == 200 and f"{field}: " in content and "(filter ignored)" in content
    assert len(response.context["page"]) == 4  # every sample, unfiltered


def test_samples_page_shows_no_ignored_filter_for_known_values(client_for, alice, scored_evaluation):
    response = client_for(alice).get(page("evaluation-samples", scored_evaluation),
                                     {"correct": "yes", "audit": "disagree", "benchmark": "math500"})
    assert "(filter ignored)" not in response.content.decode()


def test_samples_page_shows_the_reference_answer_next_to_the_extracted_one(client_for, bob, evaluation):
    SampleResult.objects.create(eval_run=evaluation, benchmark="math500", problem_id="p1", response="so 3/4",
                                response_tokens=3, correct=False, extracted_answer="3/4",
                                reference_answer="\\frac{1}{2}")
    content = client_for(bob).get(page("evaluation-samples", evaluation)).content.decode()
    assert "Reference answer</th>" in content
    extracted = content.index("<code>3/4</code>")
    assert content.index("\\frac{1}{2}</code>", extracted) - extracted < 200  # the next cell
