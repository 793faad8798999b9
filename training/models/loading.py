"""Resolve a model name to a local directory and load model and tokenizer from it."""

from __future__ import annotations

from pathlib import Path

from training.models.tiny import PRESET_NAME, create_tiny_preset


def resolve_model_path(name: str, models_dir: Path) -> str:
    """The `tiny` preset (created on first use), a local directory, or a hub id passed through."""
    if name == PRESET_NAME:
        return str(create_tiny_preset(Path(models_dir) / PRESET_NAME))
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser().resolve())
    return name


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(path: str, dtype: str = "float32"):
    """A causal LM in training mode on the CPU; the trainer moves it to its device."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    model.config.use_cache = False
    return model
