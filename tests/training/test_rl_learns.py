"""The demo recipe learns: a shortened run raises held-out accuracy beyond its interval, and lengthens responses.

Measured, not mocked: warm-up SFT then RL with the README demo's recipe (training.recipes.TINY_DEMO), shortened
to 1,000 warm-up steps and 20 iterations, on 2 threads (about 6 minutes). The warm-up checkpoint and the last one
answer the same 128 held-out problems x 4 samples (the synthetic-arithmetic benchmark's split, never trained on);
the gain's paired two-level bootstrap interval (common.paired_bootstrap) must lie above zero, so a change that
stops the recipe learning fails here. The rise in length comes from the reward alone: the recipe has no length
reward (length_penalty_weight 0), and a written chain of thought is what answers three or more operands right.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from common.knobs import parse_config
from common.paired_bootstrap import paired_change
from training.checkpoint import checkpoint_dir
from training.config import RLConfig
from training.heldout import held_out_accuracy
from training.loop import run
from training.models.loading import load_model, load_tokenizer
from training.recipes import TINY_DEMO
from training.rollout.base import SamplingSettings
from training.rollout.torch_engine import TorchRolloutEngine
from training.tasks.arithmetic import HELD_OUT, generate
from training.types import PromptRecord, TrainingHooks

pytestmark = pytest.mark.slow
WARMUP_STEPS, ITERATIONS = 1000, 20


def records(count: int, seed: int, split: str = "train") -> list[PromptRecord]:
    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=seed, split=split)]


def evaluate(path, held_out):
    tokenizer = load_tokenizer(str(path))
    engine = TorchRolloutEngine(load_model(str(path)), tokenizer)
    return held_out_accuracy(engine, tokenizer, held_out, samples_per_problem=4,
                             settings=SamplingSettings(max_new_tokens=128, temperature=1.0, seed=1234))


@pytest.fixture
def two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_the_demo_recipe_raises_held_out_accuracy_beyond_its_interval(run_paths, two_threads):
    assert TINY_DEMO.get("length_penalty_weight", 0) == 0  # no length reward: length must come from correctness
    config = parse_config(RLConfig, {**TINY_DEMO, "warmup_sft_steps": WARMUP_STEPS, "iterations": ITERATIONS,
                                     "checkpoint_every_iterations": ITERATIONS})
    reports = []
    run(config, records(256, seed=0), run_paths, TrainingHooks(on_iteration=reports.append))
    held_out = records(128, seed=90_001, split=HELD_OUT)
    warm = evaluate(checkpoint_dir(run_paths.output_dir, 0), held_out)
    trained = evaluate(checkpoint_dir(run_paths.output_dir, ITERATIONS), held_out)
    gain = paired_change(warm.correct_by_problem, trained.correct_by_problem).scaled(100)
    tokens = paired_change(warm.tokens_by_problem, trained.tokens_by_problem)
    print(f"held-out accuracy {warm.accuracy:.3f} -> {trained.accuracy:.3f} (gain {gain.change:.1f} "
          f"[{gain.low:.1f}, {gain.high:.1f}] points), mean tokens {warm.mean_response_tokens:.1f} -> "
          f"{trained.mean_response_tokens:.1f} ({tokens.change:.1f} [{tokens.low:.1f}, {tokens.high:.1f}])")
    assert gain.low > 0, gain
    assert tokens.low > 0, tokens  # figure 5: longer responses with the accuracy
    accuracy = [report.train_accuracy for report in reports]
    lengths = [report.mean_response_length for report in reports]
    assert np.mean(accuracy[-5:]) > np.mean(accuracy[:5])
    assert np.mean(lengths[-5:]) > np.mean(lengths[:5])
