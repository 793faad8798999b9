"""A grader audit grades again under the truncation policy the result was graded with."""

from __future__ import annotations

from evaluation.audit import StoredSample, audited_sample
from evaluation.suite_config import BenchmarkSettings
from grading.cot_judge import RULE, Grade, RuleVerdict
from webapp.evals.models import BenchmarkResult
from workers.audit_job import graded_as

PASSED = Grade(True, RULE, rule=RuleVerdict(True, True, extracted="7"))


def test_a_cut_off_sample_counted_wrong_stays_wrong_so_the_graders_agree_on_it():
    cut_off = StoredSample("p", 0, "... so \\boxed{7}. Wait, let me check: 3 +", correct=False, truncated=True)
    strict = audited_sample(cut_off, PASSED, truncated_counts_wrong=True)
    assert (strict.correct, strict.disagrees) == (False, False)
    lenient = audited_sample(StoredSample("p", 0, "r", correct=True, truncated=True), PASSED, False)
    assert (lenient.correct, lenient.disagrees) == (True, False)
    finished = audited_sample(StoredSample("p", 1, "r", correct=False), PASSED, True)
    assert (finished.correct, finished.disagrees) == (True, True)  # a finished one: a real disagreement


def test_the_policy_is_the_results_own_and_older_results_graded_cut_off_text_as_it_was():
    settings = BenchmarkSettings(benchmark="math500")  # today's default: counted wrong
    assert graded_as(settings, BenchmarkResult(metrics={"truncated_counts_wrong": True})).truncated_counts_wrong
    assert not graded_as(settings, BenchmarkResult(metrics={"truncated_counts_wrong": False})).truncated_counts_wrong
    assert not graded_as(settings, BenchmarkResult(metrics={"pass@1": 0.5})).truncated_counts_wrong
