"""Resolve a model name to a local directory and load model, tokenizer and image processor from it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from training.models.tiny import PRESET_NAME, create_tiny_preset
from training.models.tiny_vl import PRESET_NAME as VISION_PRESET_NAME
from training.models.tiny_vl import create_tiny_vl_preset

PRESETS = {PRESET_NAME: create_tiny_preset, VISION_PRESET_NAME: create_tiny_vl_preset}


def resolve_model_path(name: str, models_dir: Path) -> str:
    """A preset (`tiny`, `tiny-vl`; created on first use), a local directory, or a hub id passed through."""
    if name in PRESETS:
        return str(PRESETS[name](Path(models_dir) / name))
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser().resolve())
    return name


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
