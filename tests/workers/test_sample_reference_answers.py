"""The evaluation worker stores each sample's reference answer beside the answer it extracted."""

from __future__ import annotations

import pytest

from evaluation.outcome import BenchmarkOutcome, SampleOutcome
from evaluation.scoring import BenchmarkScore
from webapp.evals.models import EvalRun, SampleResult
from workers.eval_job import store_outcome

pytestmark = pytest.mark.django_db


def test_each_sample_row_keeps_the_problems_reference_answer(project, suite, alice):
    eval_run = EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice)
    assert EvalRun.claim(eval_run.pk, "worker-a")
    eval_run.refresh_from_db()
    outcome = BenchmarkOutcome(
        benchmark="math500", score=BenchmarkScore(score=0.5, ci_low=0.0, ci_high=1.0, mean_response_tokens=3.0,
                                                  num_problems=2, samples_per_problem=1, metrics={}),
        samples=[SampleOutcome(problem_id="p1", sample_index=0, response="so 4", response_tokens=3, truncated=False,
                               correct=True, extracted_answer="4", reference_answer="4"),
                 SampleOutcome(problem_id="p2", sample_index=0, response="so 3", response_tokens=3, truncated=False,
                               correct=False, extracted_answer="3", reference_answer="\\frac{1}{2}")])
    store_outcome(eval_run, outcome, progress=1.0)
    rows = SampleResult.objects.filter(eval_run=eval_run).order_by("problem_id")
    assert [(row.extracted_answer, row.reference_answer) for row in rows] == [("4", "4"), ("3", "\\frac{1}{2}")]
