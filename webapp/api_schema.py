"""The OpenAPI schema's shared parts: the error answers every operation may give, and the schema of job actions
(cancel, resume) whose answer is the job plus an `outcome`."""

from __future__ import annotations

from drf_spectacular import openapi
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny


class ErrorSerializer(serializers.Serializer):
    """DRF's answer to a refused request that is not about one field."""

    detail = serializers.CharField(help_text="What went wrong, and what to do.")


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=ErrorSerializer, description=description)


VALIDATION_ERROR = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="Refused input: {field: [reasons]} (an entry of a list as \"benchmarks[1].benchmark\"), "
                "{\"non_field_errors\": [...]}, or {\"detail\": ...} for a body that cannot be parsed.")
FORBIDDEN = error("Not logged in, or not allowed to do this (for example: only a project's owners add members).")
UNSUPPORTED_MEDIA_TYPE = error("The body's Content-Type is not one this operation reads (see its request body).")
NOT_FOUND = error("No such row among those you can see (another project's rows answer 404 too), or a page past "
                  "the last.")


class AutoSchema(openapi.AutoSchema):
    """drf-spectacular's AutoSchema plus the errors DRF answers: 400 to input (a body, or filters), 403 without a
    login, 404 to an id you cannot see or a page past the end, 415 to a body in a format the operation does not
    read. An operation's own extend_schema responses come first; codes it declares are left as they are."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, response in self.error_responses().items():
            if code not in responses:
                responses[code] = self._get_response_for_code(response, code, direction=direction)
        return responses

    def error_responses(self) -> dict[str, OpenApiResponse]:
        errors = {}
        takes_body = self.method in ("POST", "PUT", "PATCH") and self.get_request_serializer() is not None
        if takes_body or self._get_filter_parameters():
            errors["400"] = VALIDATION_ERROR
        if takes_body:
            errors["415"] = UNSUPPORTED_MEDIA_TYPE
        if any(not isinstance(permission, AllowAny) for permission in self.view.get_permissions()):
            errors["403"] = FORBIDDEN
        if "{" in self.path or (self._is_list_view() and self._get_paginator()):
            errors["404"] = NOT_FOUND
        return errors


def with_outcome(serializer_class: type[serializers.Serializer], action: str,
                 outcomes: str) -> type[serializers.Serializer]:
    """serializer_class plus the read-only `outcome` that a job action (cancel, resume) adds to the job it answers
    with; named after both ("RLRunCancel")."""
    name = serializer_class.__name__.removesuffix("Serializer") + action.title()
    meta = type("Meta", (serializer_class.Meta,), {"fields": (*serializer_class.Meta.fields, "outcome")})
    outcome = serializers.CharField(read_only=True, help_text=f"What the action did: {outcomes}.")
    return type(f"{name}Serializer", (serializer_class,),
                {"outcome": outcome, "Meta": meta, "__module__": serializer_class.__module__})


def cancel_schema(serializer_class: type[serializers.Serializer]):
    """The schema of CancelMixin's POST {id}/cancel/ (no body) for a viewset of serializer_class."""
    return extend_schema(request=None, responses={
        200: with_outcome(serializer_class, "cancel", "'cancelled' (it was queued, or its worker is gone) or "
                                                      "'cancel requested' (its worker stops it between steps)"),
        409: error("The job already ended; only a queued or running job can be cancelled."),
    })


def updates_refused(serializer_class: type[serializers.Serializer], reason: str) -> dict:
    """extend_schema_view arguments: PUT and PATCH answer serializer_class, or 409 for the reason given."""
    schema = extend_schema(responses={200: serializer_class, 409: error(reason)})
    return {"update": schema, "partial_update": schema}
