"""The run's sample browser: a GET form of filters over its stored training samples."""

from __future__ import annotations

from django import forms
from django.db.models import QuerySet

from webapp.runs.models import RLRun, TrainingSample

CORRECT_CHOICES = (("", "all"), ("yes", "correct"), ("no", "incorrect"))


class SampleFilterForm(forms.Form):
    """Filters of the sample browser; an invalid field is reported and left out of the filter."""

    correct = forms.ChoiceField(choices=CORRECT_CHOICES, required=False)
    iteration = forms.IntegerField(min_value=0, required=False)
    min_tokens = forms.IntegerField(min_value=0, required=False, label="Min length")
    max_tokens = forms.IntegerField(min_value=0, required=False, label="Max length")

    def clean(self):
        cleaned = super().clean()
        low, high = cleaned.get("min_tokens"), cleaned.get("max_tokens")
        if low is not None and high is not None and low > high:
            self.add_error("max_tokens", "must not be below min length")
        return cleaned


def valid_filters(form: SampleFilterForm) -> dict:
    """The cleaned values of the fields that passed validation (an unbound form filters nothing)."""
    form.is_valid()
    cleaned = getattr(form, "cleaned_data", {})
    return {name: value for name, value in cleaned.items() if name not in form.errors and value not in (None, "")}


def filtered_samples(run: RLRun, filters: dict) -> QuerySet:
    """The run's samples, newest iteration first, narrowed by the browser's filters."""
    samples = TrainingSample.objects.filter(run=run)
    if "correct" in filters:
        samples = samples.filter(correct=filters["correct"] == "yes")
    if "iteration" in filters:
        samples = samples.filter(iteration=filters["iteration"])
    if "min_tokens" in filters:
        samples = samples.filter(response_tokens__gte=filters["min_tokens"])
    if "max_tokens" in filters:
        samples = samples.filter(response_tokens__lte=filters["max_tokens"])
    return samples.order_by("-iteration", "id")
