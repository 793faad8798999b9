"""A small registry: name -> lazily imported "module:attribute"."""

from __future__ import annotations

import importlib
from typing import Any


class UnknownEntry(LookupError):
    pass


class Registry:
    """Maps names to "module:attr" paths; the module is imported on first lookup."""

    def __init__(self, kind: str, entries: dict[str, str] | None = None):
        self.kind = kind
        self.entries: dict[str, str] = dict(entries or {})

    def register(self, name: str, target: str) -> None:
        self.entries[name] = target

    def names(self) -> list[str]:
        return sorted(self.entries)

    def get(self, name: str) -> Any:
        if name not in self.entries:
            raise UnknownEntry(f"unknown {self.kind} {name!r}; available: {', '.join(self.names()) or 'none'}")
        module_name, attribute = self.entries[name].split(":")
        return getattr(importlib.import_module(module_name), attribute)
