"""Forms of the suite and evaluation pages: a suite's benchmark list (a formset) and the evaluation launch form.

Validation is shared with the REST API: entries through evaluation.suite_config.parse_suite (as
BenchmarkSuiteSerializer does), checkpoint-or-model through webapp.evals.api.checkpoint_or_model_error.
"""

from __future__ import annotations

from typing import Any

from django import forms

from common.knobs import ConfigError, config_to_dict
from common.path_rules import PathRefused
from evaluation.suite_config import BENCHMARKS, LM_EVAL_PREFIX, BenchmarkSettings, parse_suite
from training.config import ROLLOUT_ENGINES
from training.config.limits import MAX_SEED
from webapp.evals.api import MODEL_MAX_LENGTH, checkpoint_or_model_error
from webapp.evals.models import BenchmarkSuite
from webapp.pages.forms import KnobFormMixin, StrictFormMixin
from webapp.path_policy import checked_model, suite_judge_changes
from webapp.runs.models import Checkpoint

BENCHMARK_LIST_ID = "benchmark-names"  # the <datalist> of known benchmark names on the suite form
EXTRA_BENCHMARK_ROWS = 3
MAX_BENCHMARK_ROWS = 100


class SuiteForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, project, suite: BenchmarkSuite | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.project = project
        self.suite = suite  # the suite edited in place, None for a new one

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        others = BenchmarkSuite.objects.filter(project=self.project, name=name)
        if self.suite is not None:
            others = others.exclude(pk=self.suite.pk)
        if others.exists():
            raise forms.ValidationError(f"This project already has a suite named {name!r}.")
        return name


class BenchmarkEntryForm(KnobFormMixin, forms.Form):
    """One benchmark of the suite with its settings (a BenchmarkSettings); an untouched extra row is skipped."""

    config_class = BenchmarkSettings

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.add_knob_fields()
        benchmark = self.fields["benchmark"]
        benchmark.initial = ""  # an extra row stays empty, and is skipped, until a benchmark is named
        benchmark.widget.attrs["list"] = BENCHMARK_LIST_ID
        benchmark.help_text = f"{', '.join(BENCHMARKS)}, or {LM_EVAL_PREFIX}<task> for any lm-evaluation-harness task."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.parse_knobs()
        return cleaned


class BaseBenchmarkFormSet(forms.BaseFormSet):
    """The suite's ordered benchmarks, checked together by parse_suite (a non-empty list, no repeats), their judge
    models by the path rule (webapp.path_policy) of the suite's project."""

    def __init__(self, *args: Any, project, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.project = project

    def kept_forms(self) -> list[BenchmarkEntryForm]:
        """Validated rows (untouched extra rows are not) not marked for deletion, in order."""
        return [form for form in self.forms if form.config is not None and not self._should_delete_form(form)]

    def clean(self) -> None:
        if any(self.errors):
            return
        kept = self.kept_forms()
        try:
            entries = [config_to_dict(settings) for settings in parse_suite([config_to_dict(form.config)
                                                                             for form in kept])]
        except ConfigError as error:
            self.attach_errors(error, kept)
            return
        self.entries, errors = suite_judge_changes(self.project.pk, entries)
        if errors:
            self.attach_errors(ConfigError(errors), kept)

    def attach_errors(self, error: ConfigError, kept: list[BenchmarkEntryForm]) -> None:
        """Errors keyed "benchmarks[i].field" go to row i's field; the others above the table."""
        for key, reason in error.errors.items():
            index, _, field = key.removeprefix("benchmarks[").partition("].")
            if index.isdigit() and field in kept[int(index)].fields:
                kept[int(index)].add_error(field, reason)
            else:
                raise forms.ValidationError("Add at least one benchmark." if key == "benchmarks" else reason)


BenchmarkFormSet = forms.formset_factory(
    BenchmarkEntryForm, formset=BaseBenchmarkFormSet, extra=EXTRA_BENCHMARK_ROWS, can_delete=True,
    max_num=MAX_BENCHMARK_ROWS, validate_max=True,
)


class CheckpointChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, checkpoint: Checkpoint) -> str:
        removed = " (files removed)" if checkpoint.files_removed_at else ""
        return f"{checkpoint} (#{checkpoint.pk}){removed}"


class EvaluationLaunchForm(StrictFormMixin, forms.Form):
    """A checkpoint of the project's runs and variants, or a model by name or path, evaluated on a suite."""

    suite = forms.ModelChoiceField(queryset=BenchmarkSuite.objects.none(), help_text="The benchmarks to run.")
    checkpoint = CheckpointChoiceField(
        queryset=Checkpoint.objects.none(), required=False, empty_label="(none: evaluate the model below)",
        help_text="A checkpoint of one of the project's runs or long2short variants.",
    )
    model = forms.CharField(
        max_length=MODEL_MAX_LENGTH, required=False, widget=forms.TextInput(attrs={"placeholder": "tiny"}),
        help_text="Instead of a checkpoint: the built-in 'tiny' preset, a hub id, or the absolute path of a Hugging "
                  "Face directory in the project's own checkpoint folders or under the shared model roots.",
    )
    rollout_engine = forms.ChoiceField(choices=[(name, name) for name in ROLLOUT_ENGINES], initial="torch",
                                       help_text="torch (Hugging Face generate) or vllm.")
    seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0, help_text="Random seed of sampling.")

    def __init__(self, *args: Any, project, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["suite"].queryset = BenchmarkSuite.objects.filter(project=project)
        self.fields["checkpoint"].queryset = (Checkpoint.objects.filter(project=project)
                                              .select_related("run", "variant").order_by("-created_at", "-pk"))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.refuse_unknown_input()
        if cleaned.get("checkpoint") is not None and (removed := cleaned["checkpoint"].files_removed_error()):
            self.add_error("checkpoint", removed)
        if "checkpoint" in cleaned and "model" in cleaned:
            cleaned["model"] = cleaned["model"].strip()
            error = checkpoint_or_model_error(cleaned["checkpoint"], cleaned["model"])
            if error:
                self.add_error("checkpoint", error)
                self.add_error("model", error)
            elif cleaned["model"]:
                self.check_model_path(cleaned)
        return cleaned

    def check_model_path(self, cleaned: dict[str, Any]) -> None:
        """The model by the path rule, as the API checks it (a path kept resolved)."""
        try:
            cleaned["model"] = checked_model(self.project.pk, cleaned["model"], max_length=MODEL_MAX_LENGTH)
        except PathRefused as refused:
            self.add_error("model", refused.reason)
