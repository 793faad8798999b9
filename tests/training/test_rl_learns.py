"""A short RL run on the synthetic task raises held-out and training accuracy over the warm-up model.

Measured, not mocked: warm-up SFT then RL with the demo recipe on the easy problems (two operands), on 2
threads (a few minutes). On all four levels the gain after 24 iterations is within noise at this size
(measured +0.01 to +0.03 on 512 held-out samples); on the easy ones, after the demo's 40 iterations, it is
clear (+0.06 here, +0.09 with one thread). Lengths are not asserted:
with transformers 5.19 and tokenizers 0.23 the tiny policy learns to answer these directly (shorter), where
an earlier environment showed growth.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from common.knobs import parse_config
from training.checkpoint import checkpoint_dir
from training.config import RLConfig
from training.heldout import held_out_accuracy
from training.loop import run
from training.models.loading import load_model, load_tokenizer
from training.recipes import TINY_DEMO
from training.rollout.base import SamplingSettings
from training.rollout.torch_engine import TorchRolloutEngine
from training.tasks.arithmetic import generate
from training.types import PromptRecord, TrainingHooks

pytestmark = pytest.mark.slow
ITERATIONS = 40


def records(count: int, seed: int) -> list[PromptRecord]:
    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=seed, difficulties=("easy",))]


def evaluate(path, held_out):
    tokenizer = load_tokenizer(str(path))
    engine = TorchRolloutEngine(load_model(str(path)), tokenizer)
    return held_out_accuracy(engine, tokenizer, held_out, samples_per_problem=4,
                             settings=SamplingSettings(max_new_tokens=64, temperature=1.0, seed=1234))


@pytest.fixture
def two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_rl_raises_held_out_and_training_accuracy(run_paths, two_threads):
    config = parse_config(RLConfig, {**TINY_DEMO, "iterations": ITERATIONS, "checkpoint_every_iterations": ITERATIONS})
    reports = []
    run(config, records(256, seed=0), run_paths, TrainingHooks(on_iteration=reports.append))
    held_out = records(128, seed=999)
    warm = evaluate(checkpoint_dir(run_paths.output_dir, 0), held_out)
    trained = evaluate(checkpoint_dir(run_paths.output_dir, ITERATIONS), held_out)
    print(f"held-out accuracy {warm.accuracy:.3f} -> {trained.accuracy:.3f}, "
          f"mean tokens {warm.mean_response_tokens:.1f} -> {trained.mean_response_tokens:.1f}")
    assert trained.accuracy >= warm.accuracy + 0.03  # measured: 0.104 -> 0.164 on 512 samples
    accuracy = [report.train_accuracy for report in reports]
    assert np.mean(accuracy[-6:]) >= np.mean(accuracy[:6]) + 0.05
