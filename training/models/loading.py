"""Load model, tokenizer and image processor from a resolved model folder (training.models.resolve)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from training.context_window import config_window, folder_window
from common.path_rules import looks_like_path
from training.models.resolve import ModelUnavailable, hub_model_source, model_folder_problem
from training.models.tiny import PRESET_NAME, create_tiny_preset
from training.models.tiny_vl import PRESET_NAME as VISION_PRESET_NAME
from training.models.tiny_vl import create_tiny_vl_preset

PRESETS = {PRESET_NAME: create_tiny_preset, VISION_PRESET_NAME: create_tiny_vl_preset}

__all__ = ["ModelUnavailable", "is_vision_language", "load_image_processor", "load_model", "load_tokenizer",
           "loaded_model_window", "resolve_model_path"]


def resolve_model_path(name: str, models_dir: Path) -> str:
    """A preset (`tiny`, `tiny-vl`; created on first use), a local directory, or a hub id the hub can provide.

    A hub id becomes its cached snapshot folder when the hub is offline or unreachable; ModelUnavailable
    says why a name resolves to nothing.
    """
    if name in PRESETS:
        return str(PRESETS[name](Path(models_dir) / name))
    folder = Path(name).expanduser()
    if folder.is_dir():
        if problem := model_folder_problem(folder):
            raise ModelUnavailable(f"model {name!r}: {problem}")
        return str(folder.resolve())
    if looks_like_path(name):
        where = "" if folder.is_absolute() else f" ({folder.resolve()})"
        raise ModelUnavailable(f"model {name!r}: {'not a folder' if folder.exists() else 'no such folder'}{where}")
    try:
        return hub_model_source(name)
    except LookupError as error:
        raise ModelUnavailable(f"model {name!r} is not a preset ({', '.join(PRESETS)}), not a local folder, and the "
                               f"Hugging Face hub could not provide it ({error})") from None


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
    """A causal LM (or an image-text-to-text model, for a vision-language config) in training mode on the CPU;
    dtype "auto": the dtype the checkpoint is stored in."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    vision = is_vision_language(AutoConfig.from_pretrained(path))
    model_class = AutoModelForImageTextToText if vision else AutoModelForCausalLM
    model = model_class.from_pretrained(path, dtype="auto" if dtype == "auto" else getattr(torch, dtype))
    model.config.use_cache = False
    if not vision:
        from training.models.attention import use_grouped_sdpa

        use_grouped_sdpa(model)  # grouped key/value heads without a copy per step on the CPU
    return model


def load_image_processor(path: str):
    """The model's image processor; the PIL one where torchvision (the default's backend) is not installed."""
    from transformers import AutoImageProcessor

    if importlib.util.find_spec("torchvision") is None:
        return AutoImageProcessor.from_pretrained(path, backend="pil")
    return AutoImageProcessor.from_pretrained(path)


def loaded_model_window(model_path: str) -> int | None:
    """The window of the model a worker is about to load (a folder, or a hub id transformers can fetch)."""
    window = folder_window(model_path) if Path(model_path).is_dir() else None
    if window is None:
        from transformers import AutoConfig

        window = config_window(AutoConfig.from_pretrained(model_path).to_dict())
    return window
