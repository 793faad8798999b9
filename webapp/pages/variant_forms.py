"""The long2short variant launch form: parent, suite and the chosen method's knobs (from LONG2SHORT_CONFIGS)."""

from __future__ import annotations

from typing import Any

from django import forms

from common.knobs import config_to_dict
from training.config import LONG2SHORT_CONFIGS
from webapp.evals.models import BenchmarkSuite
from webapp.long2short.api import parent_checkpoint_error
from webapp.long2short.models import Long2ShortMethod
from webapp.long2short.parents import parent_run_choices, parent_run_error, parents_source_run
from webapp.long2short.services import variant_parameter_errors
from webapp.pages.forms import KnobFormMixin
from webapp.runs.models import Checkpoint, RLRun

DEFAULT_METHOD = Long2ShortMethod.MERGE.value


def chosen_method(data) -> str:
    """The method named by the posted form or ?method=, else the default (an unknown one too: the form refuses it)."""
    method = (data or {}).get("method", "")
    return method if method in LONG2SHORT_CONFIGS else DEFAULT_METHOD


class CheckpointChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, checkpoint: Checkpoint) -> str:
        return f"#{checkpoint.pk} {checkpoint}" + (" (files removed)" if checkpoint.files_removed_at else "")


class VariantLaunchForm(KnobFormMixin, forms.Form):
    """Method, parent (a run, or one of its checkpoints), evaluation suite, then the method's knobs."""

    knob_group_titles = {"merge": "Merging", "sampling": "Sampling", "sft": "SFT", "pairs": "Preference pairs",
                         "dpo": "DPO", "rl": "RL"}

    name = forms.CharField(max_length=200)
    method = forms.ChoiceField(choices=Long2ShortMethod.choices, widget=forms.HiddenInput,
                               help_text="How the shorter model is made; the page's method links switch it.")
    parent_run = forms.ModelChoiceField(
        queryset=RLRun.objects.none(), required=False, empty_label="(none)",
        help_text="The long-CoT run; its latest checkpoint is the parent. Listed: runs with a checkpoint whose files "
                  "are kept, and queued or running ones (the variant waits for their checkpoint).")
    parent_checkpoint = CheckpointChoiceField(queryset=Checkpoint.objects.none(), required=False,
                                              empty_label="(none)", help_text="A particular checkpoint instead.")
    evaluation_suite = forms.ModelChoiceField(
        queryset=BenchmarkSuite.objects.none(), required=False, empty_label="(none)",
        help_text="Benchmarks evaluated on the variant's checkpoint (optional).",
    )

    def __init__(self, *args: Any, project, method: str, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.project = project
        self.config_class = LONG2SHORT_CONFIGS[method]
        self.fields["method"].initial = method
        self.fields["parent_run"].queryset = parent_run_choices(project)
        self.fields["parent_checkpoint"].queryset = (Checkpoint.objects.filter(project=project)
                                                     .select_related("run", "variant").order_by("-created_at"))
        self.fields["evaluation_suite"].queryset = BenchmarkSuite.objects.filter(project=project)
        self.add_knob_fields()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        run, checkpoint = cleaned.get("parent_run"), cleaned.get("parent_checkpoint")
        if run is None and checkpoint is None and not self.has_error("parent_run") \
                and not self.has_error("parent_checkpoint"):
            self.add_error("parent_run", "Choose a parent run or a parent checkpoint.")
        if error := parent_run_error(run, checkpoint):
            self.add_error("parent_run", error)
        if error := parent_checkpoint_error(run, checkpoint):
            self.add_error("parent_checkpoint", error)
        elif checkpoint is not None and (error := checkpoint.files_removed_error()):
            self.add_error("parent_checkpoint", error)
        self.parse_knobs()
        if self.config is not None:
            self.check_method_settings(parents_source_run(run, checkpoint))
        return cleaned

    def check_method_settings(self, descends_from: RLRun | None) -> None:
        """Settings that can never run (a merge with nothing to merge...), checked as the API checks them."""
        method = self.fields["method"].initial
        errors = variant_parameter_errors(self.project, method, config_to_dict(self.config), descends_from)
        for name, reason in errors.items():
            self.add_error(name if name in self.fields else None, reason)
