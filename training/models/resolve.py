"""Resolve a model name (a preset, a local folder or a hub id) to a local directory, without torch.

The web app and the CLI check names with it; training.models.loading loads what it resolves to.
"""

from __future__ import annotations

from pathlib import Path

HUB_CHECK_SECONDS = 10.0  # one request, no retries: a misspelled name fails in seconds, not after a minute of retries


class ModelUnavailable(ValueError):
    """A model name that is no preset, no local folder, and nothing the Hugging Face hub can provide."""


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def model_folder_problem(folder: Path) -> str | None:
    """Why a local folder is no model to load, or None: it needs config.json and a tokenizer (without one,
    transformers builds an empty tokenizer, every prompt encodes to nothing and generation fails deep inside)."""
    if not (folder / "config.json").is_file():
        return "the folder has no config.json (a Hugging Face model folder holds config.json, weights and tokenizer)"
    if not any((folder / name).is_file() for name in TOKENIZER_FILES):
        return (f"the folder has no tokenizer ({' or '.join(TOKENIZER_FILES)}): save the tokenizer beside the "
                "weights (tokenizer.save_pretrained(folder))")
    return None


def hub_model_source(name: str) -> str:
    """The hub id itself when the hub has the model, else its cached snapshot folder; LookupError says why not.

    Offline (HF_HUB_OFFLINE) only the local Hugging Face cache is consulted; online, one quick request
    asks the hub, and an unreachable hub falls back to the cache.
    """
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    from common.hub_errors import invalid_hub_id, unreachable_hub_errors

    if invalid_hub_id(name):
        raise LookupError("not a valid hub id: expected org/name")
    if constants.HF_HUB_OFFLINE:
        cached = cached_hub_snapshot(name)
        if cached is None:
            raise LookupError("HF_HUB_OFFLINE is set and the model is not in the local Hugging Face cache")
        return cached
    try:
        hub_model_info(name)
    except RepositoryNotFoundError:
        raise LookupError("no such model on the hub, or a private one: set HF_TOKEN") from None
    except (HfHubHTTPError, *unreachable_hub_errors()) as error:
        cached = cached_hub_snapshot(name)
        if cached is None:
            raise LookupError(f"hub unreachable: {short_reason(error)}") from None
        return cached
    return name


def hub_model_info(name: str) -> None:
    """The one request to the hub about a model (tests patch this name); raises when the hub cannot answer."""
    from huggingface_hub import HfApi

    HfApi().model_info(name, timeout=HUB_CHECK_SECONDS)


def cached_hub_snapshot(name: str) -> str | None:
    """The model's snapshot folder in the local Hugging Face cache, or None (read from disk only)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(name, local_files_only=True)
    except (LocalEntryNotFoundError, OSError):
        return None
    return folder if (Path(folder) / "config.json").is_file() else None


def short_reason(error: BaseException) -> str:
    """The first line of an error, at most 160 characters, or its type when it says nothing."""
    lines = str(error).strip().splitlines()
    return lines[0][:160] if lines else type(error).__name__


