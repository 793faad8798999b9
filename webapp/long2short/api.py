"""REST API of long2short variants."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_view
from rest_framework import serializers

from common.path_rules import PathRefused
from training.config import LONG2SHORT_CONFIGS
from webapp.api_base import (
    CancelMixin, ProjectScopedSerializer, QueuedJobSerializerMixin, ReadOnlyScopedViewSet, ScopedViewSet,
    patched_settings, visible_field,
)
from webapp.api_schema import cancel_schema
from webapp.configs import resolve_config
from webapp.evals.models import BenchmarkSuite
from webapp.long2short.models import Long2ShortRecord, Long2ShortVariant
from webapp.long2short.parents import parent_run_error, parents_source_run
from webapp.long2short.services import MERGE_CHOICES, launch_variant, variant_parameter_errors
from webapp.runs.api import JOB_FIELDS
from webapp.runs.models import Checkpoint, RLRun


def parent_checkpoint_error(parent_run: RLRun | None, parent_checkpoint: Checkpoint | None) -> str | None:
    """A parent checkpoint given with a parent run must be one of that run's (shared with the launch form)."""
    if parent_run is not None and parent_checkpoint is not None and parent_checkpoint.run_id != parent_run.pk:
        return f"Checkpoint {parent_checkpoint.pk} is not one of run {parent_run.name}'s."
    return None


class Long2ShortVariantSerializer(QueuedJobSerializerMixin, ProjectScopedSerializer):
    same_project_fields = ("parent_run", "parent_checkpoint", "evaluation_suite")
    editable_in_any_state = ("name",)
    job_noun = "variant"
    parent_run = visible_field(RLRun, required=False, allow_null=True)
    parent_checkpoint = visible_field(Checkpoint, required=False, allow_null=True)
    evaluation_suite = visible_field(BenchmarkSuite, required=False, allow_null=True)
    parameters = serializers.JSONField(required=False, help_text="The method's settings; defaults fill the rest.")
    owner = serializers.StringRelatedField()

    class Meta:
        model = Long2ShortVariant
        fields = ("id", "project", "name", "parent_run", "parent_checkpoint", "started_from", "start_reason", "method",
                  "parameters", "evaluation_suite", "owner", *JOB_FIELDS)
        read_only_fields = ("started_from", "start_reason", *JOB_FIELDS)

    def validate(self, attrs):
        attrs = super().validate(attrs)
        current = lambda name, default=None: attrs.get(name, getattr(self.instance, name, default))  # noqa: E731
        if current("parent_run") is None and current("parent_checkpoint") is None:
            raise serializers.ValidationError({"parent_run": "give a parent run or a parent checkpoint"})
        if error := parent_checkpoint_error(current("parent_run"), current("parent_checkpoint")):
            raise serializers.ValidationError({"parent_checkpoint": error})
        if (self.instance is None or attrs.keys() & {"parent_run", "parent_checkpoint"}) and \
                (error := parent_run_error(current("parent_run"), current("parent_checkpoint"))):
            raise serializers.ValidationError({"parent_run": [error]})
        if attrs.get("parent_checkpoint") is not None and (error := attrs["parent_checkpoint"].files_removed_error()):
            raise serializers.ValidationError({"parent_checkpoint": [error]})
        if self.instance is None or attrs.keys() & {"method", "parameters"}:
            descends_from = parents_source_run(current("parent_run"), current("parent_checkpoint"))
            attrs["parameters"] = self.resolved_parameters(attrs, current("method"), current("project"), descends_from)
        return attrs

    def resolved_parameters(self, attrs, method: str, project, descends_from: RLRun | None) -> dict:
        """The method's settings with defaults filled in (a PATCH of the same method keeps the stored ones it
        omits), refused naming `parameters` and the knob when they are invalid or can never run."""
        stored = self.instance.parameters if self.instance is not None and self.instance.method == method else None
        given = attrs["parameters"] if "parameters" in attrs else stored
        try:
            parameters = resolve_config(LONG2SHORT_CONFIGS[method], patched_settings(self, stored, given) or {})
        except serializers.ValidationError as error:
            raise serializers.ValidationError({"parameters": error.detail}) from None
        if errors := variant_parameter_errors(project, method, parameters, descends_from):
            raise serializers.ValidationError({"parameters": {name: [reason] for name, reason in errors.items()}})
        return parameters

    def create(self, validated_data):
        try:
            return launch_variant(owner=self.context["request"].user, **validated_data)
        except PathRefused as refused:  # a chosen checkpoint's files were removed since validate
            detail = {refused.field: [refused.reason]}
            raise serializers.ValidationError({"parameters": detail} if refused.field in MERGE_CHOICES else detail) \
                from None


@extend_schema_view(cancel=cancel_schema(Long2ShortVariantSerializer))
class Long2ShortVariantViewSet(CancelMixin, ScopedViewSet):
    queryset = Long2ShortVariant.objects.select_related("owner")
    serializer_class = Long2ShortVariantSerializer
    filterset_fields = ("project", "parent_run", "method", "status")


class Long2ShortRecordSerializer(serializers.ModelSerializer):
    class Meta:
        model = Long2ShortRecord
        fields = ("id", "variant", "kind", "prompt_id", "problem", "chosen", "chosen_tokens", "rejected",
                  "rejected_tokens", "rejected_reason", "extra")


class Long2ShortRecordViewSet(ReadOnlyScopedViewSet):
    """Kept samples (shortest rejection) and preference pairs (DPO) written by the variant's worker."""

    queryset = Long2ShortRecord.objects.order_by("variant_id", "id")
    serializer_class = Long2ShortRecordSerializer
    filterset_fields = ("variant", "kind", "prompt_id", "rejected_reason")
