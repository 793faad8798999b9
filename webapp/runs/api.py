"""REST API of RL runs, their metrics and checkpoints."""

from __future__ import annotations

import dataclasses

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response

from common.path_rules import PathRefused
from training.config import RLConfig
from training.config.resumable import config_differences
from webapp.api_base import (
    CancelMixin, Conflict, ProjectScopedSerializer, QueuedJobSerializerMixin, ReadOnlyScopedViewSet, ScopedViewSet,
    patched_settings, visible_field,
)
from webapp.api_filters import IntegerFilter, ResponseLengthFilter, VisibleFilterSet
from webapp.api_schema import cancel_schema, error, updates_refused, with_outcome
from webapp.configs import resolve_config
from webapp.evals.models import BenchmarkSuite
from webapp.pages.long2short_data import dashboard_data
from webapp.prompts.models import PromptSet
from webapp.runs.models import Checkpoint, IterationMetric, RLRun, TrainingSample
from webapp.path_policy import model_knob_changes
from webapp.runs.services import launch_run, registered_checkpoint, resume_run, run_launch_errors

JOB_FIELDS = ("status", "progress", "cancel_requested", "worker", "error", "traceback",
              "created_at", "started_at", "finished_at")


class RLRunSerializer(QueuedJobSerializerMixin, ProjectScopedSerializer):
    same_project_fields = ("prompt_set", "evaluation_suite")
    editable_in_any_state = ("name", "description")
    job_noun = "run"
    prompt_set = visible_field(PromptSet)
    evaluation_suite = visible_field(BenchmarkSuite, required=False, allow_null=True)
    config = serializers.JSONField(required=False, help_text="RL knobs; omitted ones take their defaults (in a "
                                                             "PATCH, their stored values).")
    owner = serializers.StringRelatedField()

    class Meta:
        model = RLRun
        fields = ("id", "project", "name", "description", "prompt_set", "evaluation_suite", "config", "owner",
                  "current_iteration", "total_iterations", *JOB_FIELDS)
        read_only_fields = ("current_iteration", "total_iterations", *JOB_FIELDS)

    def validate_config(self, value):
        """POST and PUT: omitted knobs take their defaults; PATCH: the given knobs change, the others stay."""
        stored = self.instance.config if self.instance is not None else None
        return resolve_config(RLConfig, patched_settings(self, stored, value))

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if self.instance is None:
            attrs.setdefault("config", resolve_config(RLConfig, {}))
        if "config" in attrs:
            attrs["config"] = self.checked_model_paths(attrs)
        if self.instance is not None and self.instance.has_trained():
            self.refuse_recipe_changes(attrs)
        if self.instance is None or self.frozen_fields(attrs):
            self.check_launch_settings(attrs)
        return attrs

    def refuse_recipe_changes(self, attrs) -> None:
        """A run that has trained resumes from its checkpoints, which keep its recipe and prompts: refuse what the
        resume would refuse (each knob with both values), now rather than on the worker."""
        run, errors = self.instance, {}
        copy = "launch a copy with the new settings (Launch like this) to train with them"
        if "prompt_set" in attrs and attrs["prompt_set"].pk != run.prompt_set_id:
            errors["prompt_set"] = [f"run {run.pk} has trained on prompt set {run.prompt_set_id} and resumes from "
                                    f"its checkpoints with those prompts; {copy}"]
        if "config" in attrs:
            defaults = {field.name: field.default for field in dataclasses.fields(RLConfig)}
            changed = config_differences(run.config, attrs["config"], defaults)
            if changed:
                errors["config"] = {name: [f"run {run.pk} has trained with {old!r}, which its checkpoints keep "
                                           f"(asked: {new!r}); {copy}"] for name, old, new in changed}
        if errors:
            raise serializers.ValidationError(errors)

    def checked_model_paths(self, attrs) -> dict:
        """The config with its model and judge model checked by the path rule (paths stored resolved)."""
        project = attrs.get("project") or self.instance.project
        changes, errors = model_knob_changes(project.pk, attrs["config"])
        if errors:
            raise serializers.ValidationError({"config": {name: [reason] for name, reason in errors.items()}})
        return {**attrs["config"], **changes}

    def check_launch_settings(self, attrs) -> None:
        """Refuse what passes every knob's check but can never run (an empty prompt set...), naming the field."""
        current = {name: attrs[name] if name in attrs else getattr(self.instance, name, None)
                   for name in ("prompt_set", "evaluation_suite", "config")}
        errors = run_launch_errors(current["prompt_set"], current["evaluation_suite"], current["config"])
        knobs = {name: [reason] for name, reason in errors.items() if name in current["config"]}
        fields = {name: [reason] for name, reason in errors.items() if name not in knobs}
        if knobs or fields:
            raise serializers.ValidationError(fields | ({"config": knobs} if knobs else {}))

    def create(self, validated_data):
        return launch_run(owner=self.context["request"].user, **validated_data)

    def update(self, instance, validated_data):
        if "config" in validated_data:
            validated_data = {**validated_data, "total_iterations": validated_data["config"]["iterations"]}
        return super().update(instance, validated_data)


class RLRunFilter(VisibleFilterSet):
    class Meta:
        model = RLRun
        fields = ("project", "status", "prompt_set")


@extend_schema_view(cancel=cancel_schema(RLRunSerializer))
class RLRunViewSet(CancelMixin, ScopedViewSet):
    queryset = RLRun.objects.select_related("owner")
    serializer_class = RLRunSerializer
    filterset_class = RLRunFilter

    @extend_schema(request=None, responses={
        200: with_outcome(RLRunSerializer, "resume", "'resumed'"),
        409: error("Only a failed or cancelled run can be resumed.")})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """Re-queue a failed or cancelled run; it resumes from its newest checkpoint. 409 in any other state."""
        run = self.get_object()
        previous = run.status
        if not resume_run(run, request.user):
            return Response({"detail": f"only a failed or cancelled run can be resumed; this run is {previous}"},
                            status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(run).data | {"outcome": "resumed"})

    @extend_schema(request=None, responses={200: dict})
    @action(detail=True, methods=["get"], url_path="token-efficiency")
    def token_efficiency(self, request, pk=None):
        """The long2short token-efficiency table of the run's variants (report figure 7): per variant and
        benchmark, score, mean tokens, the checkpoint compared with, the accuracy change (points) and token change
        (percent) with their 95% paired two-level bootstrap intervals, and accuracy per 1k tokens."""
        rows = dashboard_data(self.get_object())["table"]
        return Response({"results": [efficiency_row(row) for row in rows]})


def efficiency_row(row: dict) -> dict:
    """One token-efficiency table row as JSON (intervals as [low, high] lists or null)."""
    efficiency = dataclasses.asdict(row["efficiency"])
    for name in ("accuracy_change_interval", "token_change_interval"):
        efficiency[name] = list(efficiency[name]) if efficiency[name] else None
    return {"variant": row["variant"], "label": row["label"], "benchmark": row["benchmark"],
            "compared_with": row["reference"], **efficiency}


class IterationMetricSerializer(serializers.ModelSerializer):
    class Meta:
        model = IterationMetric
        fields = ("id", "run", "iteration", "train_accuracy", "mean_response_length", "p95_response_length",
                  "loss", "kl", "tokens_generated", "tokens_reused", "seconds", "extra", "created_at")


class IterationMetricFilter(VisibleFilterSet):
    iteration_min = IntegerFilter(field_name="iteration", lookup_expr="gte")
    iteration_max = IntegerFilter(field_name="iteration", lookup_expr="lte")

    class Meta:
        model = IterationMetric
        fields = ("run",)


class IterationMetricViewSet(ReadOnlyScopedViewSet):
    """Per-iteration metrics, written by workers; filter by run and iteration range."""

    queryset = IterationMetric.objects.all()
    serializer_class = IterationMetricSerializer
    filterset_class = IterationMetricFilter


class TrainingSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrainingSample
        fields = ("id", "run", "iteration", "prompt_id", "problem", "sample_index", "response", "reward", "correct",
                  "response_tokens", "truncated", "repeated")


class TrainingSampleFilter(ResponseLengthFilter):
    class Meta:
        model = TrainingSample
        fields = ("run", "iteration", "correct", "truncated", "repeated")


class TrainingSampleViewSet(ReadOnlyScopedViewSet):
    """Responses the policy was trained on, written by workers; filter by run, iteration, correctness, length."""

    queryset = TrainingSample.objects.all()
    serializer_class = TrainingSampleSerializer
    filterset_class = TrainingSampleFilter


class CheckpointSerializer(ProjectScopedSerializer):
    """A checkpoint registered by path (an outside model to evaluate); runs' and variants' are written by workers."""

    read_only_reasons = {**ProjectScopedSerializer.read_only_reasons,
                         "run": "a run's checkpoints are saved by its worker",
                         "variant": "a variant's checkpoints are saved by its worker",
                         "size_bytes": "measured from the path",
                         "files_removed_at": "set by the run's worker when keep_last_checkpoints removes the files"}

    class Meta:
        model = Checkpoint
        fields = ("id", "project", "run", "variant", "iteration", "path", "size_bytes", "created_at",
                  "files_removed_at")
        read_only_fields = ("run", "variant", "size_bytes", "files_removed_at")
        extra_kwargs = {"path": {"help_text": "Absolute path of the checkpoint's directory (Hugging Face layout) "
                                              "inside the project's own checkpoint folders or under "
                                              "MIRRORLAB_MODEL_ROOTS, on storage the web server shares with the "
                                              "workers; stored resolved."}}

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if "path" in attrs:
            project = attrs.get("project") or self.instance.project
            try:
                attrs["path"], attrs["size_bytes"] = registered_checkpoint(project.pk, attrs["path"].strip())
            except PathRefused as refused:
                raise serializers.ValidationError({refused.field: [refused.reason]}) from None
        return attrs


def refuse_changing_a_worker_checkpoint(checkpoint: Checkpoint) -> None:
    """409 for a checkpoint its run's or variant's worker wrote: its row describes files the worker saved."""
    if checkpoint.written_by_worker:
        raise Conflict(f"checkpoint {checkpoint.pk} ({checkpoint}) was saved by a worker and cannot be changed; "
                       "register another directory with POST /api/checkpoints/")


@extend_schema_view(**updates_refused(CheckpointSerializer, "A worker saved this checkpoint; it cannot change."))
class CheckpointViewSet(ScopedViewSet):
    """Checkpoints; registering one by path lets an outside model be evaluated. Workers' checkpoints are fixed."""

    queryset = Checkpoint.objects.select_related("run", "variant")
    serializer_class = CheckpointSerializer
    filterset_fields = ("project", "run", "variant")

    def update(self, request, *args, **kwargs):
        refuse_changing_a_worker_checkpoint(self.get_object())
        return super().update(request, *args, **kwargs)
