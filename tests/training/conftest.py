"""Shared tiny-model fixtures: the preset created once per session, and a briefly warmed-up copy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from training.models.tiny import create_tiny_preset

    return create_tiny_preset(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture(scope="session")
def warm_model_dir(tiny_model_dir, tmp_path_factory) -> Path:
    """The tiny model after a short warm-up SFT on arithmetic traces: decisive greedy outputs."""
    import torch

    from training.models.loading import load_model, load_tokenizer
    from training.sft import warmup_sft
    from training.tasks.arithmetic import warmup_traces

    torch.manual_seed(0)
    tokenizer, model = load_tokenizer(str(tiny_model_dir)), load_model(str(tiny_model_dir))
    examples = [(problem.problem, response) for problem, response in warmup_traces(2000, seed=0)]
    warmup_sft(model, tokenizer, examples, steps=60, batch_size=8, block_length=128, learning_rate=3e-3, seed=0)
    target = tmp_path_factory.mktemp("models") / "warm"
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return target


@pytest.fixture
def run_paths(tmp_path, tiny_model_dir):
    """RunPaths whose models folder already holds the session's tiny preset."""
    from training.types import RunPaths

    models = tmp_path / "models"
    models.mkdir()
    shutil.copytree(tiny_model_dir, models / "tiny")
    return RunPaths(output_dir=tmp_path / "run", models_dir=models)
