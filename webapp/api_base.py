"""Building blocks shared by every app's REST API: scoping, strict input, same-project checks, PATCH merges,
updates that write only what changed, cancel."""

from __future__ import annotations

from typing import Any, Mapping

from django.db import models
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.fields import SkipField
from rest_framework.response import Response

from webapp.jobs import JobStatus
from webapp.projects.models import Project

IGNORED_INPUT_KEYS = frozenset({"csrfmiddlewaretoken"})  # posted by the browsable API's HTML forms


class Conflict(APIException):
    """409: the request is valid but the row's state forbids it (the detail says why and what to do)."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class StrictFieldsMixin:
    """Refuses input fields the serializer does not take (a 400 naming each and listing the writable ones)
    instead of dropping them silently. A read-only field passes only when it repeats the stored value, so a
    GET's body can be sent back by PUT."""

    read_only_reasons: dict[str, str] = {}  # field -> why it cannot be written (default: set by the server)

    def to_internal_value(self, data):
        if isinstance(data, Mapping) and (errors := self.unexpected_field_errors(data)):
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)

    def unexpected_field_errors(self, data: Mapping) -> dict[str, list[str]]:
        writable = [name for name, field in self.fields.items() if not field.read_only]
        allowed = f"writable fields: {', '.join(writable)}"
        errors = {}
        for name in sorted(data.keys() - IGNORED_INPUT_KEYS - set(writable)):
            if name not in self.fields:
                errors[name] = [f"unknown field; {allowed}"]
            elif not self.repeats_stored_value(name, data[name]):
                reason = self.read_only_reasons.get(name, "set by the server")
                errors[name] = [f"read-only ({reason}); {allowed}"]
        return errors

    def repeats_stored_value(self, name: str, value: Any) -> bool:
        """True when an update sends a read-only field unchanged (its value as a GET shows it)."""
        if self.instance is None:
            return False
        field = self.fields[name]
        try:
            attribute = field.get_attribute(self.instance)
        except SkipField:
            return False
        return value == (None if attribute is None else field.to_representation(attribute))


def patched_settings(serializer: serializers.Serializer, stored: Mapping[str, Any] | None, given: Any) -> Any:
    """A PATCH's settings merged over the stored ones (POST and PUT replace them: omitted ones take defaults)."""
    if serializer.partial and serializer.instance is not None and isinstance(given, Mapping) and stored:
        return {**stored, **given}
    return given


class VisibleRelatedField(serializers.PrimaryKeyRelatedField):
    """A foreign key the requesting user may reference: only rows visible to them."""

    def get_queryset(self):
        request = self.context.get("request")
        queryset = super().get_queryset()
        return queryset.visible_to(request.user) if request else queryset.none()


def visible_field(model, **kwargs) -> VisibleRelatedField:
    return VisibleRelatedField(queryset=model.objects.all(), **kwargs)


class StrictSerializer(StrictFieldsMixin, serializers.Serializer):
    """A plain serializer that refuses unknown fields."""


class ChangedFieldsUpdateMixin:
    """update() writes the columns the request gives and no others (save(update_fields=...)): what a worker or
    another request wrote to the row meanwhile (status, progress, log, cancel_requested...) stays as written."""

    def update(self, instance: models.Model, validated_data: dict) -> models.Model:
        serializers.raise_errors_on_nested_writes("update", self, validated_data)
        for name, value in validated_data.items():
            setattr(instance, name, value)
        if validated_data:
            instance.save(update_fields=list(validated_data))
        return instance


class StrictModelSerializer(StrictFieldsMixin, ChangedFieldsUpdateMixin, serializers.ModelSerializer):
    """A model serializer that refuses unknown and read-only fields, and updates only the fields given."""


class ProjectScopedSerializer(StrictModelSerializer):
    """Rejects references to rows of another project than the object's own."""

    same_project_fields: tuple[str, ...] = ()
    read_only_reasons = {"project": "rows do not move between projects"}

    def validate(self, attrs):
        attrs = super().validate(attrs)
        project = attrs.get("project") or getattr(self.instance, "project", None)
        errors = {}
        for name in self.same_project_fields:
            related = attrs.get(name)
            if related is not None and project is not None and related.project_id != project.pk:
                errors[name] = f"belongs to another project than '{project.slug}'"
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def get_fields(self):
        fields = super().get_fields()
        if "project" in fields and not fields["project"].read_only:
            fields["project"] = visible_field(Project, help_text="Project id (you must be a member).")
            if self.instance is not None:
                fields["project"].read_only = True  # objects do not move between projects
        return fields


class UniqueNameInProjectMixin:
    """`name` is unique within a project (a database constraint), checked on create and on rename and refused on
    `name` (DRF's own check answers non_field_errors, and skips updates, where `project` is read-only)."""

    def get_unique_together_validators(self):
        return []  # the project-and-name constraint is checked by validate(), naming `name`

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if "name" in attrs:
            project = attrs.get("project") or self.instance.project
            if error := self.name_error(project, attrs["name"]):
                raise serializers.ValidationError({"name": [error]})
        return attrs

    def name_error(self, project: Project, name: str) -> str | None:
        """Why `name` cannot name this row in the project, or None."""
        model = self.Meta.model
        others = model.objects.filter(project=project, name=name)
        if self.instance is not None:
            others = others.exclude(pk=self.instance.pk)
        return f"This project already has a {model._meta.verbose_name} named {name!r}." if others.exists() else None


class QueuedJobSerializerMixin:
    """A job row's serializer (before ProjectScopedSerializer): fields other than `editable_in_any_state` change
    only while the job is queued. An update writes only the fields given, the frozen ones in one conditional
    UPDATE (... WHERE status = 'queued'), so a job a worker claims meanwhile is refused with a 400 naming the
    fields, not changed under the worker; the answer shows the row as it is after the update."""

    editable_in_any_state: tuple[str, ...] = ()
    job_noun = "job"

    def frozen_fields(self, changes: Mapping[str, Any]) -> list[str]:
        return sorted(changes.keys() - set(self.editable_in_any_state))

    def refuse_frozen(self, names: list[str], status: str) -> None:
        raise serializers.ValidationError({name: [f"can change only while the {self.job_noun} is queued, not {status}"]
                                           for name in names})

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if self.instance is not None and self.instance.status != JobStatus.QUEUED and self.frozen_fields(attrs):
            self.refuse_frozen(self.frozen_fields(attrs), self.instance.status)
        return attrs

    def update(self, instance, validated_data):
        frozen = self.frozen_fields(validated_data)
        if not frozen:
            instance = super().update(instance, validated_data)
        elif not type(instance).objects.filter(pk=instance.pk, status=JobStatus.QUEUED).update(**validated_data):
            instance.refresh_from_db(fields=["status"])
            given = [name for name in frozen if name in self.initial_data]  # not those derived from them
            self.refuse_frozen(given or frozen, instance.status)
        instance.refresh_from_db()
        return instance


class ScopedViewSet(viewsets.ModelViewSet):
    """A model viewset over the rows the user may see; others answer 404."""

    http_method_names = ["get", "post", "put", "patch", "head", "options"]

    def get_queryset(self):
        return self.queryset.visible_to(self.request.user)


class ReadOnlyScopedViewSet(viewsets.ReadOnlyModelViewSet):
    def get_queryset(self):
        return self.queryset.visible_to(self.request.user)


class CancelMixin:
    """POST {id}/cancel/: cancel a queued job at once, or ask a running one to stop."""

    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        job = self.get_object()
        outcome = job.request_cancel()
        if outcome == "already finished":
            return Response({"detail": f"nothing to cancel: this job already ended ({job.status}); only a queued "
                                       "or running job can be cancelled"}, status=status.HTTP_409_CONFLICT)
        return Response(self.get_serializer(job).data | {"outcome": outcome})


class CreateListRetrieveUpdate(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin
):
    pass
