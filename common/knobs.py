"""Frozen-dataclass configs with per-field validation: the one config system.

A knob is a dataclass field whose metadata carries its help text, form group and
constraints. `parse_config(cls, data)` turns a plain mapping (YAML, a form, a
JSON request) into a frozen instance, or raises `ConfigError` naming every
refused field and why.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from typing import Any, Iterable, Mapping


class ConfigError(ValueError):
    """A config was refused; `errors` maps each field name to the reason."""

    def __init__(self, errors: Mapping[str, str]):
        self.errors = dict(errors)
        detail = "; ".join(f"{name}: {reason}" for name, reason in self.errors.items())
        super().__init__(f"invalid config: {detail}")


def knob(
    default: Any,
    help: str,
    group: str = "general",
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: float | None = None,
    choices: tuple[str, ...] | None = None,
    test_only_choices: tuple[str, ...] = (),
    deployment: bool = False,
) -> Any:
    """A config field with its help text, form group and constraints.

    test_only_choices: choices that exist for tests (never offered on the launch form outside them).
    deployment: where the run executes rather than what it learns; kept off the launch form and out of
    checkpoints.
    """
    metadata = {
        "help": help,
        "group": group,
        "minimum": minimum,
        "maximum": maximum,
        "exclusive_minimum": exclusive_minimum,
        "choices": choices,
        "test_only_choices": test_only_choices,
        "deployment": deployment,
    }
    return dataclasses.field(default=default, metadata=metadata)


def field_type(cls: type, field: dataclasses.Field) -> tuple[type, bool]:
    """(base type, optional?) of a knob, resolving string annotations."""
    annotation = typing.get_type_hints(cls)[field.name]
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        (base,) = [arg for arg in args if arg is not type(None)]
        return base, True
    return annotation, False


def _coerce(value: Any, base: type) -> Any:
    """Convert a form or YAML value to the knob's type, or raise ValueError."""
    if base is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "yes", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("false", "0", "no", "off"):
            return False
        raise ValueError("must be true or false")
    if base is int:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError("must be a whole number")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ValueError("must be a whole number") from None
    if base is float:
        if isinstance(value, bool):
            raise ValueError("must be a number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError("must be a number") from None
        if not math.isfinite(number):
            raise ValueError("must be a finite number")
        return number
    if base is str:
        if isinstance(value, (list, tuple)):  # JSON and YAML lists: the list knobs take comma-separated text
            example = ",".join(str(item) for item in value[:3]) or "3,7"
            raise ValueError(f"must be text, not a list: write the items comma-separated, e.g. \"{example}\"")
        if not isinstance(value, str):
            raise ValueError("must be text")
        return value.strip()
    raise TypeError(f"unsupported knob type {base!r}")


def knob_range(meta: Mapping[str, Any]) -> str:
    """The allowed range in words: 'at least 1 and at most 65536', 'greater than 0.0'."""
    bounds = []
    if meta["minimum"] is not None:
        bounds.append(f"at least {meta['minimum']}")
    if meta["exclusive_minimum"] is not None:
        bounds.append(f"greater than {meta['exclusive_minimum']}")
    if meta["maximum"] is not None:
        bounds.append(f"at most {meta['maximum']}")
    return " and ".join(bounds)


def _check_constraints(value: Any, meta: Mapping[str, Any]) -> None:
    """Raise ValueError when a coerced value breaks the knob's constraints."""
    if meta["choices"] is not None and value not in meta["choices"]:
        raise ValueError(f"unknown value {value!r}; choose one of {', '.join(meta['choices'])}")
    below = (meta["minimum"] is not None and value < meta["minimum"]) or (
        meta["exclusive_minimum"] is not None and value <= meta["exclusive_minimum"])
    above = meta["maximum"] is not None and value > meta["maximum"]
    if below or above:
        raise ValueError(f"must be {knob_range(meta)}, not {value!r}")
    if isinstance(value, str) and meta["choices"] is None and not value:
        raise ValueError("must not be empty")


def unknown_setting(name: str, known: Iterable[str]) -> str:
    """The error for a setting that is not among `known`, naming the closest known one when a typo is likely."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    return f"unknown setting (did you mean {close[0]!r}?)" if close else "unknown setting"


def parse_config(cls: type, data: Mapping[str, Any] | None) -> Any:
    """Build a frozen `cls` from a mapping; unknown or invalid fields raise ConfigError."""
    data = dict(data or {})
    errors: dict[str, str] = {}
    values: dict[str, Any] = {}
    fields = {field.name: field for field in dataclasses.fields(cls)}
    for name in data.keys() - fields.keys():
        if isinstance(name, str):
            errors[name] = unknown_setting(name, fields)
        else:  # YAML reads an unquoted 1, no or 2024-01-01 as a number, boolean or date
            errors[repr(name)] = (f"a setting's name must be text, not the {type(name).__name__} {name!r} (in YAML, "
                                  "quote the key)")
    for name, field in fields.items():
        if name not in data:
            continue
        base, optional = field_type(cls, field)
        raw = data[name]
        if raw is None or (optional and raw == ""):
            if optional:
                values[name] = None
            else:
                errors[name] = "is required"
            continue
        try:
            value = _coerce(raw, base)
            _check_constraints(value, field.metadata)
        except ValueError as error:
            errors[name] = str(error)
            continue
        values[name] = value
    if errors:
        raise ConfigError(dict(sorted(errors.items())))
    config = cls(**values)
    cross_field_errors = config.cross_field_errors() if hasattr(config, "cross_field_errors") else {}
    if cross_field_errors:
        raise ConfigError(cross_field_errors)
    return config


def config_to_dict(config: Any, deployment: bool = True) -> dict[str, Any]:
    """The resolved config as plain JSON-ready data (stored on rows); deployment=False leaves out the
    deployment knobs (what checkpoints store)."""
    data = dataclasses.asdict(config)
    if deployment:
        return data
    kept = {field.name for field in dataclasses.fields(config) if not field.metadata.get("deployment")}
    return {name: value for name, value in data.items() if name in kept}


def describe_knobs(cls: type) -> list[dict[str, Any]]:
    """Each knob's name, type, default, help, group and constraints, in field order."""
    described = []
    for field in dataclasses.fields(cls):
        base, optional = field_type(cls, field)
        described.append(
            {
                "name": field.name,
                "type": base.__name__,
                "optional": optional,
                "default": field.default,
                **field.metadata,
            }
        )
    return described
