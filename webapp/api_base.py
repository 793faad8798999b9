"""Building blocks shared by every app's REST API: scoping, strict input, same-project checks, PATCH merges,
cancel."""

from __future__ import annotations

from typing import Any, Mapping

import django_filters
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException
from rest_framework.fields import SkipField
from rest_framework.response import Response

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


class ResponseLengthFilter(django_filters.FilterSet):
    """min_tokens / max_tokens bounds on a sample table's response_tokens (subclasses give Meta)."""

    min_tokens = django_filters.NumberFilter(field_name="response_tokens", lookup_expr="gte")
    max_tokens = django_filters.NumberFilter(field_name="response_tokens", lookup_expr="lte")


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


class StrictModelSerializer(StrictFieldsMixin, serializers.ModelSerializer):
    """A model serializer that refuses unknown and read-only fields."""


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
