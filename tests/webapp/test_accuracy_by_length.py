"""Accuracy-versus-length curves derived from per-sample rows."""

import pytest

from webapp.evals.models import EvalRun, SampleResult
from webapp.evals.services import accuracy_by_length

pytestmark = pytest.mark.django_db


def test_bins_count_samples_and_accuracy_in_the_database(project, suite):
    eval_run = EvalRun.objects.create(project=project, suite=suite, model="tiny")
    # (tokens, correct): bin 0-99 holds 3 samples (2 correct), bin 100-199 holds 1 (wrong), bin 300-399 holds 2 (1).
    samples = [(10, True), (50, True), (99, False), (150, False), (300, True), (399, False)]
    SampleResult.objects.bulk_create(
        SampleResult(eval_run=eval_run, benchmark="math500", problem_id=f"p{index}", response_tokens=tokens,
                     correct=correct) for index, (tokens, correct) in enumerate(samples)
    )
    SampleResult.objects.create(eval_run=eval_run, benchmark="aime24", problem_id="other", response_tokens=20,
                                correct=False)
    curve = accuracy_by_length(eval_run.pk, "math500", bin_tokens=100)
    assert [(row["bin_start"], row["samples"]) for row in curve] == [(0, 3), (100, 1), (300, 2)]
    assert [row["accuracy"] for row in curve] == pytest.approx([2 / 3, 0.0, 0.5])
    assert curve[0]["mean_tokens"] == pytest.approx(53.0)


def test_a_bin_width_below_one_is_refused():
    with pytest.raises(ValueError, match="bin_tokens"):
        accuracy_by_length(1, "math500", 0)
