"""RunPaths over the session's tiny preset, and its models loaded once per module (the model folders are made in
tests/conftest.py)."""

from __future__ import annotations

import os
import shutil

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def run_paths(tmp_path, tiny_model_dir):
    """RunPaths whose models folder already holds the session's tiny preset."""
    from training.types import RunPaths

    models = tmp_path / "models"
    models.mkdir()
    shutil.copytree(tiny_model_dir, models / "tiny")
    return RunPaths(output_dir=tmp_path / "run", models_dir=models)


@pytest.fixture(scope="module")
def warm(warm_model_dir):
    """The warmed-up tiny model and its tokenizer, loaded once per test module."""
    from training.models.loading import load_model, load_tokenizer

    return load_model(str(warm_model_dir)), load_tokenizer(str(warm_model_dir))


@pytest.fixture(scope="module")
def untrained(tiny_model_dir):
    """The untrained tiny model (greedy decoding of it falls into loops) and its tokenizer, once per module."""
    from training.models.loading import load_model, load_tokenizer

    return load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))
