"""Resolve a model name to a local directory and load model, tokenizer and image processor from it."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from training.models.tiny import PRESET_NAME, create_tiny_preset
from training.models.tiny_vl import PRESET_NAME as VISION_PRESET_NAME
from training.models.tiny_vl import create_tiny_vl_preset

PRESETS = {PRESET_NAME: create_tiny_preset, VISION_PRESET_NAME: create_tiny_vl_preset}
HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")  # org/name
HUB_CHECK_SECONDS = 10.0  # one request, no retries: a misspelled name fails in seconds, not after a minute of retries


class ModelUnavailable(ValueError):
    """A model name that is no preset, no local folder, and nothing the Hugging Face hub can provide."""


def resolve_model_path(name: str, models_dir: Path) -> str:
    """A preset (`tiny`, `tiny-vl`; created on first use), a local directory, or a hub id the hub can provide.

    A hub id becomes its cached snapshot folder when the hub is offline or unreachable; ModelUnavailable
    says why a name resolves to nothing.
    """
    if name in PRESETS:
        return str(PRESETS[name](Path(models_dir) / name))
    folder = Path(name).expanduser()
    if folder.is_dir():
        return str(folder.resolve())
    if looks_like_path(name):
        where = "" if folder.is_absolute() else f" ({folder.resolve()})"
        raise ModelUnavailable(f"model {name!r}: {'not a folder' if folder.exists() else 'no such folder'}{where}")
    try:
        return hub_model_source(name)
    except LookupError as error:
        raise ModelUnavailable(f"model {name!r} is not a preset ({', '.join(PRESETS)}), not a local folder, and the "
                               f"Hugging Face hub could not provide it ({error})") from None


def looks_like_path(name: str) -> bool:
    """/x, ./x, ../x, ~x, or a path with a separator that is not a hub id's org/name."""
    if name in (".", "..") or name.startswith(("/", "./", "../", "~")):
        return True
    return os.sep in name and not HUB_ID.fullmatch(name)


def hub_model_source(name: str) -> str:
    """The hub id itself when the hub has the model, else its cached snapshot folder; LookupError says why not.

    Offline (HF_HUB_OFFLINE) only the local Hugging Face cache is consulted; online, one quick request
    asks the hub, and an unreachable hub falls back to the cache.
    """
    from huggingface_hub import constants
    from huggingface_hub.errors import HFValidationError, HfHubHTTPError, RepositoryNotFoundError
    from huggingface_hub.utils import validate_repo_id

    from common.hub_errors import unreachable_hub_errors

    try:
        validate_repo_id(name)
    except HFValidationError:
        raise LookupError("not a valid hub id: expected org/name") from None
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


def is_vision_language(config) -> bool:
    """True for a model with a vision encoder (Qwen2-VL, Qwen2.5-VL and the like)."""
    return getattr(config, "vision_config", None) is not None


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(path: str, dtype: str = "float32"):
    """A causal LM (or an image-text-to-text model, for a vision-language config) in training mode on the CPU."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    vision = is_vision_language(AutoConfig.from_pretrained(path))
    model_class = AutoModelForImageTextToText if vision else AutoModelForCausalLM
    model = model_class.from_pretrained(path, dtype=getattr(torch, dtype))
    model.config.use_cache = False
    return model


def load_image_processor(path: str):
    """The model's image processor; the PIL one where torchvision (the default's backend) is not installed."""
    from transformers import AutoImageProcessor

    if importlib.util.find_spec("torchvision") is None:
        return AutoImageProcessor.from_pretrained(path, backend="pil")
    return AutoImageProcessor.from_pretrained(path)
