"""An evaluation's samples page: a GET form of filters over its sampled responses."""

from __future__ import annotations

from django import forms
from django.db.models import QuerySet

from webapp.evals.models import EvalRun
from webapp.evals.services import disagreeing

CORRECT_CHOICES = (("", "all"), ("yes", "correct"), ("no", "wrong"))
AUDIT_CHOICES = (("", "all"), ("disagree", "disagrees with the audit"))


class EvaluationSampleFilterForm(forms.Form):
    """Filters of the samples page; an invalid value is reported ("filter ignored") and left out of the filter."""

    benchmark = forms.CharField(max_length=100, required=False)
    correct = forms.ChoiceField(choices=CORRECT_CHOICES, required=False)
    audit = forms.ChoiceField(choices=AUDIT_CHOICES, required=False,
                              help_text="disagree: the samples whose latest grader audit gave another verdict")


def filtered_samples(evaluation: EvalRun, filters: dict) -> QuerySet:
    """The evaluation's samples by benchmark, problem and sample, narrowed by the page's valid filters."""
    samples = evaluation.samples.order_by("benchmark", "problem_id", "sample_index")
    if "benchmark" in filters:
        samples = samples.filter(benchmark=filters["benchmark"])
    if "correct" in filters:
        samples = samples.filter(correct=filters["correct"] == "yes")
    if filters.get("audit") == "disagree":
        samples = disagreeing(samples)
    return samples
