"""A run killed mid-way resumes from its newest checkpoint and reproduces the uninterrupted run."""

from __future__ import annotations

import dataclasses

import pytest

from common.knobs import parse_config
from training.checkpoint import latest_checkpoint
from training.config import RLConfig
from training.loop import run
from training.tasks.arithmetic import generate
from training.types import PromptRecord, RunPaths, TrainingHooks

pytestmark = pytest.mark.slow

RECORDS = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
           for p in generate(32, seed=3)]
SETTINGS = dict(
    iterations=4, batch_size=3, samples_per_problem=3, max_response_tokens=24, partial_rollout_token_budget=10,
    checkpoint_every_iterations=2, learning_rate=1e-3, sampling_strategy="prioritized", seed=7,
    length_penalty_weight=0.2,
)


class Killed(Exception):
    pass


def train(paths: RunPaths, model: str = "tiny", kill_after: int | None = None) -> dict[int, tuple]:
    """Metrics by iteration; optionally die right after reporting iteration `kill_after` (before its checkpoint)."""
    metrics = {}

    def on_iteration(report):
        # timings vary; the rollout rounds and parked groups follow the replay buffer's restored state
        kept = {name: report.extra[name] for name in ("rollout_rounds", "groups_parked", "finished_groups_waiting",
                                                      "groups_trained")}
        metrics[report.iteration] = dataclasses.astuple(dataclasses.replace(report, seconds=0.0, extra=kept))
        if report.iteration == kill_after:
            raise Killed()

    try:
        run(parse_config(RLConfig, {**SETTINGS, "model": model}), RECORDS, paths,
            TrainingHooks(on_iteration=on_iteration))
    except Killed:
        pass
    return metrics


def test_resume_after_a_kill_gives_the_same_metrics_as_an_uninterrupted_run(run_paths, warm_model_dir, tmp_path):
    model = str(warm_model_dir)
    uninterrupted = train(RunPaths(tmp_path / "straight", run_paths.models_dir), model)
    killed = train(run_paths, model, kill_after=3)
    assert sorted(killed) == [1, 2, 3]
    assert latest_checkpoint(run_paths.output_dir).iteration == 2  # iteration 3 died before its checkpoint
    resumed = train(run_paths, model)
    assert sorted(resumed) == [3, 4]  # nothing lost, nothing before the checkpoint repeated
    assert {**killed, **resumed} == uninterrupted
    losses = [uninterrupted[i][4] for i in uninterrupted]
    assert any(loss not in (None, 0.0) for loss in losses), f"the run should have trained: losses {losses}"


def test_the_checkpoint_holds_weights_config_and_training_state(run_paths):
    train(run_paths)
    checkpoint = latest_checkpoint(run_paths.output_dir)
    files = {path.name for path in checkpoint.path.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", "mirrorlab_config.json",
            "training_state.pt"} <= files
    assert checkpoint.iteration == 4
    assert set(checkpoint.state) >= {"iteration", "rng", "sampler", "replay_buffer"}
    counts = checkpoint.state["replay_buffer_finish_counts"]  # one rank's decayed counts of groups rolled out
    assert len(counts) == 1 and counts[0]["fresh"] > 0 <= counts[0]["fresh_finished"] <= counts[0]["fresh"]
    import json

    from training.checkpoint import CONFIG_FILE

    stored = json.loads((checkpoint.path / CONFIG_FILE).read_text())
    assert "iterations" in stored and "vllm_sidecar_socket" not in stored  # deployment knobs stay with the worker
