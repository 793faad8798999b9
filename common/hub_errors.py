"""Errors that mean the Hugging Face hub cannot be reached, for models (training) and datasets (evaluation)."""

from __future__ import annotations

import importlib


def unreachable_hub_errors() -> tuple[type[BaseException], ...]:
    """Errors meaning "no hub": offline mode, no network, or a dataset the hub does not serve."""
    errors: list[type[BaseException]] = [ConnectionError, TimeoutError]
    candidates = {
        "huggingface_hub.errors": ("LocalEntryNotFoundError", "OfflineModeIsEnabled"),
        "datasets.exceptions": ("DatasetNotFoundError", "DataFilesNotFoundError"),
        "httpx": ("TransportError",), "httpx2": ("TransportError",),
        "requests.exceptions": ("ConnectionError", "Timeout"),
    }
    for module_name, names in candidates.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        errors.extend(getattr(module, name) for name in names if hasattr(module, name))
    return tuple(errors)
