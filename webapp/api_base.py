"""Building blocks shared by every app's REST API: scoping, same-project checks, cancel."""

from __future__ import annotations

from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from webapp.projects.models import Project


class VisibleRelatedField(serializers.PrimaryKeyRelatedField):
    """A foreign key the requesting user may reference: only rows visible to them."""

    def get_queryset(self):
        request = self.context.get("request")
        queryset = super().get_queryset()
        return queryset.visible_to(request.user) if request else queryset.none()


def visible_field(model, **kwargs) -> VisibleRelatedField:
    return VisibleRelatedField(queryset=model.objects.all(), **kwargs)


class ProjectScopedSerializer(serializers.ModelSerializer):
    """Rejects references to rows of another project than the object's own."""

    same_project_fields: tuple[str, ...] = ()

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
        code = status.HTTP_409_CONFLICT if outcome == "already finished" else status.HTTP_200_OK
        data = self.get_serializer(job).data | {"outcome": outcome}
        return Response(data, status=code)


class CreateListRetrieveUpdate(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.UpdateModelMixin
):
    pass
