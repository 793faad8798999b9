"""Bridge from the engine's config dataclasses to web validation errors (no torch imported)."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from rest_framework import serializers

from common.knobs import ConfigError, config_to_dict, parse_config


def resolve_config(cls: type, data: Mapping[str, Any] | None) -> dict[str, Any]:
    """Validated config with defaults filled in, or a DRF ValidationError keyed by knob."""
    if data is not None and not isinstance(data, Mapping):
        raise serializers.ValidationError("must be an object of settings")
    if refused := deployment_knobs_given(cls, data or {}):
        raise serializers.ValidationError({name: ["a deployment setting of the workers (their environment), not "
                                                  "of a run"] for name in refused})
    try:
        return config_to_dict(parse_config(cls, data))
    except ConfigError as error:
        raise as_validation_error(error) from None


def deployment_knobs_given(cls: type, data: Mapping[str, Any]) -> list[str]:
    """Deployment knobs given a value: where a run executes is the workers' business (a user naming, say, a Unix
    socket of the worker machine is refused)."""
    return sorted(field.name for field in dataclasses.fields(cls)
                  if field.metadata.get("deployment") and data.get(field.name) not in (None, ""))


def as_validation_error(error: ConfigError) -> serializers.ValidationError:
    """A DRF error with one list of reasons per refused field."""
    return serializers.ValidationError({name: [reason] for name, reason in error.errors.items()})
