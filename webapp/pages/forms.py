"""Forms of the browser pages: prompt-set upload and hub import, and the RL run launch form from RLConfig."""

from __future__ import annotations

import dataclasses
from typing import Any

from django import forms
from django.conf import settings

from common.knobs import ConfigError, config_to_dict, describe_knobs, parse_config
from common.path_rules import PathRefused
from evaluation.datasets.prompt_import import PromptImportConfig
from training.config import SECTIONS, RLConfig
from webapp.evals.models import BenchmarkSuite
from webapp.limits import upload_size_error
from webapp.path_policy import checked_dataset_id, model_knob_changes
from common.prompt_files import guess_format
from webapp.prompts.models import PromptSet
from webapp.prompts.services import prompt_set_name_error
from webapp.runs.services import run_launch_errors

PROMPT_FILE_HELP = (
    "JSONL (one JSON object per line) or CSV with a header. Fields: problem (required), answer or "
    "test_cases (one is required), image, domain, tags, difficulty, pass_rate."
)


def new_prompt_set_name(project, name: str) -> str:
    """The stripped name, or a ValidationError when the project has (or is importing) a set of that name."""
    name = name.strip()
    error = prompt_set_name_error(project, name)
    if error:
        raise forms.ValidationError(error)
    return name


class PromptSetUploadForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    file = forms.FileField(
        help_text=PROMPT_FILE_HELP, widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.json,.ndjson,.csv"})
    )

    def __init__(self, *args: Any, project, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_name(self) -> str:
        return new_prompt_set_name(self.project, self.cleaned_data["name"])

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if error := upload_size_error(upload.size):
            raise forms.ValidationError(error)
        try:
            self.file_format = guess_format(upload.name)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None
        return upload


def knob_label(name: str) -> str:
    """learning_rate -> 'Learning rate'."""
    return name.replace("_", " ").capitalize()


def knob_form_field(knob: dict[str, Any]) -> forms.Field:
    """A form field of a knob's type, default, help and choices; the constraints are checked by parse_config."""
    common = {"label": knob_label(knob["name"]), "help_text": knob["help"], "initial": knob["default"]}
    if knob["choices"]:
        return forms.ChoiceField(choices=[(choice, choice) for choice in knob["choices"]], **common)
    if knob["type"] == "bool":
        return forms.BooleanField(required=False, **common)
    required = not knob["optional"]
    limits = {attr: knob[key] for attr, key in (("min", "minimum"), ("max", "maximum")) if knob[key] is not None}
    if knob["type"] == "int":
        return forms.IntegerField(required=required, widget=forms.NumberInput(attrs={"step": 1, **limits}), **common)
    if knob["type"] == "float":
        widget = forms.NumberInput(attrs={"step": "any", **limits})
        return forms.FloatField(required=required, widget=widget, **common)
    return forms.CharField(required=required, **common)


class StrictFormMixin:
    """refuse_unknown_input(), called from clean(): a posted field the form does not have is an error above the
    form, never silently dropped."""

    def refuse_unknown_input(self) -> None:
        own = f"{self.prefix}-" if self.prefix else ""
        expected = {self.add_prefix(name) for name in self.fields} | {"csrfmiddlewaretoken"}
        unknown = sorted(key for key in self.data if key.startswith(own) and key not in expected)
        if unknown:
            names = ", ".join(key.removeprefix(own) for key in unknown)
            self.add_error(None, f"unknown field(s) {names}; this form takes: {', '.join(self.fields)}")


class KnobFormMixin(StrictFormMixin):
    """Adds one field per knob of `config_class`; after is_valid(), `self.config` is the parsed config."""

    config_class: type
    knob_group_titles: dict[str, str] = {}  # group -> fieldset title; others are the group's name capitalised
    knob_group_order: tuple[str, ...] = ()  # groups shown first, in this order; the rest as they first appear

    def add_knob_fields(self) -> None:
        """The knobs a researcher sets: not the deployment ones, and test-only choices only in tests."""
        offer_test_choices = settings.OFFER_TEST_ONLY_CHOICES
        self.knobs = [knob if offer_test_choices else
                      {**knob, "choices": knob["choices"] and tuple(choice for choice in knob["choices"]
                                                                      if choice not in knob["test_only_choices"])}
                      for knob in describe_knobs(self.config_class) if not knob["deployment"]]
        self.config = None
        for knob in self.knobs:
            if knob["name"] in self.fields:
                raise ValueError(f"knob {knob['name']!r} clashes with a form field of the same name")
            self.fields[knob["name"]] = knob_form_field(knob)

    def parse_knobs(self) -> None:
        """Validate the knob values with parse_config and attach each refusal to its field; refuse posted
        fields the form does not have (a mistyped knob is never silently dropped)."""
        self.refuse_unknown_input()
        values = {knob["name"]: self.cleaned_data[knob["name"]] for knob in self.knobs
                  if knob["name"] in self.cleaned_data}
        try:
            config = parse_config(self.config_class, values)
        except ConfigError as error:
            for name, reason in error.errors.items():
                if name not in self.errors:
                    self.add_error(name if name in self.fields else None, reason)
            return
        if len(values) == len(self.knobs):
            self.config = config

    def knob_fieldsets(self) -> list[tuple[str, list[forms.BoundField]]]:
        """(group title, bound fields): the groups of knob_group_order first, then as they appear among the knobs."""
        groups: dict[str, list[forms.BoundField]] = {group: [] for group in self.knob_group_order}
        for knob in self.knobs:
            groups.setdefault(knob["group"], []).append(self[knob["name"]])
        return [(self.knob_group_titles.get(group, knob_label(group)), fields)
                for group, fields in groups.items() if fields]


class RunLaunchForm(KnobFormMixin, forms.Form):
    config_class = RLConfig
    knob_group_order = tuple(section.section_name for section in SECTIONS)
    knob_group_titles = {section.section_name: section.section_title for section in SECTIONS}

    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    prompt_set = forms.ModelChoiceField(queryset=PromptSet.objects.none(), help_text="The problems trained on.")
    evaluation_suite = forms.ModelChoiceField(
        queryset=BenchmarkSuite.objects.none(), required=False, empty_label="(none)",
        help_text="Benchmarks evaluated on the run's checkpoints (optional).",
    )

    def __init__(self, *args: Any, project, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["prompt_set"].queryset = PromptSet.objects.filter(project=project)
        self.fields["evaluation_suite"].queryset = BenchmarkSuite.objects.filter(project=project)
        self.add_knob_fields()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.parse_knobs()
        if self.config is not None:
            self.check_model_paths()
        if self.config is not None and cleaned.get("prompt_set") is not None:
            errors = run_launch_errors(cleaned["prompt_set"], cleaned.get("evaluation_suite"),
                                       config_to_dict(self.config))
            for name, reason in errors.items():
                self.add_error(name, reason)
        return cleaned

    def check_model_paths(self) -> None:
        """The model and judge model by the path rule, as the API checks them (paths kept resolved)."""
        changes, errors = model_knob_changes(self.project.pk, config_to_dict(self.config))
        for name, reason in errors.items():
            self.add_error(name, reason)
        self.config = None if errors else dataclasses.replace(self.config, **changes)


class PromptSetImportForm(KnobFormMixin, forms.Form):
    """A prompt set from a hub dataset (or a local folder/file) and a column mapping, imported by a worker."""

    config_class = PromptImportConfig
    knob_group_titles = {"dataset": "Dataset", "mapping": "Column mapping"}

    name = forms.CharField(max_length=200, help_text="Name of the new prompt set.")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args: Any, project, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.project = project
        self.add_knob_fields()

    def clean_name(self) -> str:
        return new_prompt_set_name(self.project, self.cleaned_data["name"])

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.parse_knobs()
        if self.config is not None:
            try:
                self.config = dataclasses.replace(self.config, dataset_id=checked_dataset_id(self.config.dataset_id))
            except PathRefused as refused:
                self.add_error(refused.field, refused.reason)
                self.config = None
        return cleaned
