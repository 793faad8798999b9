"""Long2short RL (METHOD.md section 8): continue RL from a checkpoint with the length penalty on from the
first iteration and a shorter maximum rollout length; everything else as in the parent run."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from training.checkpoint import checkpoint_dir, folder_bytes
from training.config import Long2ShortRLConfig, RLConfig
from training.long2short.base import (
    Long2ShortHooks, Long2ShortJob, Long2ShortOutcome, Long2ShortStopped, parent_run_config,
)
from training.backends import trainer_backends
from training.types import IterationReport, RunPaths, TrainingHooks

RUN_FOLDER = "rl"  # the loop's checkpoints go to job.output_dir / "rl" / "checkpoints"


def long2short_rl_config(config: Long2ShortRLConfig, parent_config: dict[str, Any], model_path: str) -> RLConfig:
    """The parent run's RLConfig with the long2short changes: the checkpoint as model, no warm-up,
    the length penalty from iteration 1, the response limit cut to a fraction (a response cut off there is
    wrong), no periodic evaluation."""
    parent = parent_run_config(parent_config)
    max_tokens = max(1, int(parent.max_response_tokens * config.max_response_fraction))
    budget = parent.partial_rollout_token_budget
    return dataclasses.replace(
        parent, model=model_path, warmup_sft_steps=0, iterations=config.iterations,
        learning_rate=config.learning_rate, seed=config.seed, length_penalty_weight=config.length_penalty_weight,
        length_penalty_warmup_iterations=0, max_response_tokens=max_tokens, evaluate_every_iterations=0,
        truncated_counts_wrong=True,  # report 2.4: the shorter limit penalises responses that run over it
        partial_rollout_token_budget=None if budget is None else min(budget, max_tokens),
        checkpoint_every_iterations=min(parent.checkpoint_every_iterations, config.iterations),
        # a schedule over iterations (curriculum, warmup_then_hard) is the parent's, already run: not replayed
        sampling_strategy="prioritized" if parent.sampling_strategy == "prioritized" else "uniform",
    )


def run(config: Long2ShortRLConfig, job: Long2ShortJob, hooks: Long2ShortHooks) -> Long2ShortOutcome:
    """Run the RL loop (resuming from this variant's newest checkpoint) and point to its last checkpoint."""
    rl_config = long2short_rl_config(config, job.parent_config, str(job.parent_model_path))
    hooks.log(f"long2short RL: {rl_config.iterations} iterations, length penalty weight "
              f"{rl_config.length_penalty_weight} from iteration 1, "
              f"max response tokens {rl_config.max_response_tokens}")
    reports: list[IterationReport] = []

    def on_iteration(report: IterationReport) -> None:
        reports.append(report)
        hooks.log(f"iteration {report.iteration}: accuracy {report.train_accuracy}, "
                  f"mean length {report.mean_response_length}")
        hooks.progress(report.iteration / rl_config.iterations)

    paths = RunPaths(output_dir=job.output_dir / RUN_FOLDER, models_dir=job.models_dir)
    backend = trainer_backends.get(rl_config.trainer_backend)
    outcome = backend(rl_config, job.records, paths,
                      TrainingHooks(on_iteration=on_iteration, log=hooks.log, should_stop=hooks.should_stop))
    if outcome.stopped_early:
        raise Long2ShortStopped(f"stopped after iteration {outcome.iterations_done} of {rl_config.iterations}")
    final = checkpoint_dir(paths.output_dir, rl_config.iterations)
    if not final.is_dir():  # a backend that trains nothing ("noop-test") leaves the parent's weights as they are
        hooks.log(f"trainer backend {rl_config.trainer_backend!r} wrote no checkpoint: the variant is the parent")
        final = job.parent_model_path
    return Long2ShortOutcome(checkpoint_path=Path(final), size_bytes=folder_bytes(final),
                             iteration=rl_config.iterations, metrics=iteration_metrics(reports, rl_config))


def iteration_metrics(reports: list[IterationReport], rl_config: RLConfig) -> dict[str, float]:
    """First and last trained accuracy and mean length (of this process's iterations), and the limits used."""
    metrics = {"max_response_tokens": float(rl_config.max_response_tokens),
               "length_penalty_weight": float(rl_config.length_penalty_weight)}
    measured = [report for report in reports if report.train_accuracy is not None]
    if measured:
        metrics |= {"train_accuracy_first": measured[0].train_accuracy,
                    "train_accuracy_last": measured[-1].train_accuracy,
                    "mean_response_length_first": measured[0].mean_response_length,
                    "mean_response_length_last": measured[-1].mean_response_length}
    return metrics
