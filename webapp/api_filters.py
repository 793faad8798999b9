"""Query filters of the REST API (DEFAULT_FILTER_BACKENDS): ids of rows the user may see, whole numbers refused
when fractional.

A foreign-key filter (?run=, ?project=, ?variant=...) chooses among the rows the requesting user may see, so the
id of another project's row and an id that does not exist get the same 400; an integer filter (?iteration=,
?min_tokens=...) refuses 1.9 rather than letting the database truncate it; a boolean filter (?correct=,
?truncated=...) refuses a value other than true/false/1/0 rather than ignoring it.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django_filters import rest_framework as drf_filters
from django_filters.conf import settings as filter_settings


class IntegerFilter(django_filters.NumberFilter):
    """A whole number: '1.9' is a 400 naming the parameter (a NumberFilter reads a decimal)."""

    field_class = forms.IntegerField


BOOLEAN_VALUES = {"true": True, "1": True, "false": False, "0": False}


class StrictBooleanField(forms.Field):
    """true/false (or 1/0, any case); another value is an error naming it (a BooleanFilter ignores it)."""

    default_error_messages = {"invalid": "'%(value)s' is not a boolean: give true or false."}

    def to_python(self, value):
        if value in self.empty_values:
            return None
        if isinstance(value, bool):
            return value
        try:
            return BOOLEAN_VALUES[str(value).strip().lower()]
        except KeyError:
            raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value}) from None


class StrictBooleanFilter(django_filters.BooleanFilter):
    """A boolean filter whose unknown value is a 400 naming the parameter."""

    field_class = StrictBooleanField


def visible_rows(model: type[models.Model]):
    """A filter's choices: the rows of `model` the requesting user may see (its queryset's visible_to)."""

    def rows(request):
        return model.objects.visible_to(request.user) if request is not None else model.objects.none()

    return rows


def visible_foreign_key(field: models.ForeignKey) -> dict:
    return {"queryset": visible_rows(field.remote_field.model), "to_field_name": field.remote_field.field_name,
            "null_label": filter_settings.NULL_CHOICE_LABEL if field.null else None}


class VisibleFilterSet(drf_filters.FilterSet):
    """The base of every API filter set: foreign keys among the visible rows, integers whole, booleans strict."""

    FILTER_DEFAULTS = {
        **drf_filters.FilterSet.FILTER_DEFAULTS,
        **{field: {"filter_class": IntegerFilter} for field in drf_filters.FilterSet.FILTER_DEFAULTS
           if issubclass(field, models.IntegerField)},
        models.BooleanField: {"filter_class": StrictBooleanFilter},
        models.ForeignKey: {"filter_class": django_filters.ModelChoiceFilter, "extra": visible_foreign_key},
        models.OneToOneField: {"filter_class": django_filters.ModelChoiceFilter, "extra": visible_foreign_key},
    }


class VisibleFilterBackend(drf_filters.DjangoFilterBackend):
    """DjangoFilterBackend whose filter sets built from a view's filterset_fields are VisibleFilterSets."""

    filterset_base = VisibleFilterSet


class ResponseLengthFilter(VisibleFilterSet):
    """min_tokens / max_tokens bounds on a sample table's response_tokens (subclasses give Meta)."""

    min_tokens = IntegerFilter(field_name="response_tokens", lookup_expr="gte")
    max_tokens = IntegerFilter(field_name="response_tokens", lookup_expr="lte")
