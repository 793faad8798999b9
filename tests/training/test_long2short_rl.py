"""Long2short RL on the synthetic task shortens a long-CoT parent's responses while accuracy holds.

Measured, not mocked: a cheap long-CoT parent (the tiny preset after warm-up SFT on traces that are
mostly step by step), then a few long2short RL iterations, both scored on the same held-out problems.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from common.knobs import config_to_dict, parse_config
from training.config import Long2ShortRLConfig, RLConfig
from training.heldout import held_out_accuracy
from training.long2short.base import Long2ShortHooks, Long2ShortJob, Long2ShortStopped
from training.long2short.rl import long2short_rl_config, run
from training.models.loading import load_model, load_tokenizer
from training.recipes import TINY_DEMO
from training.rollout.base import SamplingSettings
from training.rollout.torch_engine import TorchRolloutEngine
from training.tasks.arithmetic import direct, generate, step_by_step
from training.types import PromptRecord

PARENT_MAX_TOKENS = 64
ACCURACY_MARGIN = 0.15  # generous: the cheap parent is weak and 256 held-out samples are noisy


@pytest.fixture
def two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def records(count: int, seed: int) -> list[PromptRecord]:
    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=seed)]


def long_cot_parent(tiny_model_dir: Path, target: Path) -> Path:
    """The tiny preset after 150 SFT steps on traces, 80% of them step by step (a long-CoT habit)."""
    import random

    from training.sft import warmup_sft

    torch.manual_seed(0)
    tokenizer, model = load_tokenizer(str(tiny_model_dir)), load_model(str(tiny_model_dir))
    style = random.Random(1)
    examples = [(p.problem, step_by_step(p) if style.random() < 0.8 else direct(p)) for p in generate(4000, seed=0)]
    warmup_sft(model, tokenizer, examples, steps=150, batch_size=8, block_length=128, learning_rate=3e-3, seed=0)
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return target


def evaluate(path: Path, held_out: list[PromptRecord]):
    tokenizer = load_tokenizer(str(path))
    engine = TorchRolloutEngine(load_model(str(path)), tokenizer)
    return held_out_accuracy(engine, tokenizer, held_out, samples_per_problem=4,
                             settings=SamplingSettings(max_new_tokens=PARENT_MAX_TOKENS, temperature=1.0, seed=1234))


def parent_run_config() -> dict:
    return config_to_dict(parse_config(RLConfig, {**TINY_DEMO, "batch_size": 8,
                                                  "max_response_tokens": PARENT_MAX_TOKENS}))


def test_the_rl_config_keeps_the_parent_run_and_applies_the_long2short_changes():
    parent = {**parent_run_config(), "warmup_sft_steps": 400, "length_penalty_warmup_iterations": 5,
              "partial_rollout_token_budget": 48, "evaluate_every_iterations": 5}
    config = parse_config(Long2ShortRLConfig, {"iterations": 6, "max_response_fraction": 0.3, "learning_rate": 2e-4,
                                               "length_penalty_weight": 0.7, "seed": 3})
    rl = long2short_rl_config(config, parent, "/checkpoints/parent")
    assert (rl.model, rl.warmup_sft_steps, rl.iterations, rl.seed) == ("/checkpoints/parent", 0, 6, 3)
    assert (rl.learning_rate, rl.length_penalty_weight, rl.length_penalty_warmup_iterations) == (2e-4, 0.7, 0)
    assert rl.max_response_tokens == 19  # int(64 * 0.3)
    assert rl.partial_rollout_token_budget == 19 and rl.evaluate_every_iterations == 0
    assert (rl.batch_size, rl.tau, rl.samples_per_problem) == (8, TINY_DEMO["tau"], TINY_DEMO["samples_per_problem"])
    assert rl.cross_field_errors() == {}


def test_the_rl_config_does_not_replay_the_parents_curriculum():
    """The parent ran its schedule (easy first, or the whole set then hard problems): long2short RL draws
    uniformly, and a warmup_then_hard parent with more curriculum iterations than the variant's stays valid."""
    config = parse_config(Long2ShortRLConfig, {"iterations": 6})
    for strategy, expected in (("curriculum", "uniform"), ("warmup_then_hard", "uniform"),
                               ("prioritized", "prioritized"), ("uniform", "uniform")):
        parent = {**parent_run_config(), "sampling_strategy": strategy, "curriculum_iterations": 30}
        rl = long2short_rl_config(config, parent, "/checkpoints/parent")
        assert rl.sampling_strategy == expected and rl.cross_field_errors() == {}


def noop_job(tiny_model_dir: Path, tmp_path: Path) -> Long2ShortJob:
    parent_config = {**parent_run_config(), "trainer_backend": "noop-test"}
    return Long2ShortJob(parent_model_path=tiny_model_dir, parent_config=parent_config, records=tuple(records(8, 0)),
                         output_dir=tmp_path / "variant", models_dir=tmp_path / "models")


def test_it_reports_progress_per_iteration_and_keeps_the_parent_when_the_backend_trains_nothing(tiny_model_dir,
                                                                                                tmp_path):
    fractions, lines = [], []
    outcome = run(parse_config(Long2ShortRLConfig, {"iterations": 4}), noop_job(tiny_model_dir, tmp_path),
                  Long2ShortHooks(progress=fractions.append, log=lines.append))
    assert fractions == [0.25, 0.5, 0.75, 1.0]
    assert outcome.iteration == 4 and outcome.checkpoint_path == tiny_model_dir and outcome.size_bytes > 0
    assert outcome.metrics["max_response_tokens"] == 32 and "mean_response_length_last" in outcome.metrics
    assert any("wrote no checkpoint" in line for line in lines)


def test_it_stops_between_iterations_when_asked(tiny_model_dir, tmp_path):
    asked = iter([False, False, True])
    with pytest.raises(Long2ShortStopped, match="stopped after iteration 2 of 5"):
        run(parse_config(Long2ShortRLConfig, {"iterations": 5}), noop_job(tiny_model_dir, tmp_path),
            Long2ShortHooks(should_stop=lambda: next(asked)))


@pytest.mark.slow
def test_long2short_rl_shortens_responses_and_keeps_accuracy(tiny_model_dir, tmp_path, two_threads):
    parent = long_cot_parent(tiny_model_dir, tmp_path / "parent")
    job = Long2ShortJob(parent_model_path=parent, parent_config=parent_run_config(), records=tuple(records(256, 0)),
                        output_dir=tmp_path / "variant", models_dir=tmp_path / "models")
    config = parse_config(Long2ShortRLConfig, {"iterations": 8, "learning_rate": 2e-4, "length_penalty_weight": 0.5,
                                               "max_response_fraction": 0.5})
    fractions = []
    outcome = run(config, job, Long2ShortHooks(progress=fractions.append))
    assert outcome.iteration == 8 and fractions[-1] == 1.0
    assert outcome.checkpoint_path == tmp_path / "variant" / "rl" / "checkpoints" / "iteration-000008"
    held_out = records(64, seed=999)
    before, after = evaluate(parent, held_out), evaluate(outcome.checkpoint_path, held_out)
    print(f"held-out accuracy {before.accuracy:.3f} -> {after.accuracy:.3f}, "
          f"mean tokens {before.mean_response_tokens:.1f} -> {after.mean_response_tokens:.1f}")
    # measured: mean tokens 22.1 -> 6.6 (-70%), accuracy 0.039 -> 0.062 (about 5 CPU-minutes in all)
    assert after.mean_response_tokens <= 0.85 * before.mean_response_tokens
    assert after.accuracy >= before.accuracy - ACCURACY_MARGIN
