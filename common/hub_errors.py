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


def invalid_hub_id(name: str) -> str | None:
    """Why `name` cannot be a hub repository id (Hugging Face's own rule), or None when it can."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError as error:
        return str(error)
    return None
