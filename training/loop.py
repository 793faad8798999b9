"""The RL loop of METHOD.md sections 3 to 7: iterative, synchronous, one screen long."""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from training.batch import build_policy_batch
from training.collect import RolloutLimits, collect_rollouts, new_groups
from training.config import RLConfig
from training.rollout.base import SamplingSettings
from training.scoring import ScoredGroups, score_groups
from training.session import RunSession, start_session
from training.trajectories import Group
from training.types import IterationReport, PromptRecord, RunPaths, TrainingHooks, TrainingOutcome

REPEAT_LIMITS = {"max_period": 32, "min_repeats": 4, "min_span": 16}


def run(config: RLConfig, records: Sequence[PromptRecord], paths: RunPaths, hooks: TrainingHooks) -> TrainingOutcome:
    """Train until `config.iterations`, resuming from the newest checkpoint; stops early when asked."""
    session = start_session(config, records, paths, hooks)
    last_saved = session.next_iteration - 1
    try:
        for iteration in range(session.next_iteration, config.iterations + 1):
            if hooks.should_stop():
                if last_saved < iteration - 1:
                    hooks.on_checkpoint(session.save(iteration - 1))
                return TrainingOutcome(iterations_done=iteration - 1, stopped_early=True)
            hooks.on_iteration(run_iteration(session, iteration))
            if iteration % config.checkpoint_every_iterations == 0 or iteration == config.iterations:
                hooks.on_checkpoint(session.save(iteration))
                last_saved = iteration
    finally:
        session.close()
    return TrainingOutcome(iterations_done=config.iterations, stopped_early=False)


def run_iteration(session: RunSession, iteration: int) -> IterationReport:
    """Sample problems, roll out, score, update the policy, hand the new weights to the rollout engine."""
    started = time.perf_counter()
    config = session.config
    groups = session.buffer.take_all()
    fresh = session.sampler.sample(iteration, max(0, config.batch_size - len(groups)), session.numpy_rng)
    groups += new_groups(fresh, session.prompts, iteration, config.samples_per_problem)
    settings = SamplingSettings(max_new_tokens=config.max_response_tokens, temperature=config.temperature,
                                seed=config.seed * 1_000_003 + iteration)
    limits = RolloutLimits(config.max_response_tokens, config.partial_rollout_token_budget, config.samples_per_problem)
    rollouts = collect_rollouts(session.engine, groups, session.buffer, settings, limits, iteration,
                                REPEAT_LIMITS if config.repeat_penalty > 0 else None)
    update, scored = {}, None
    if rollouts.finished:
        scored = score_groups(rollouts.finished, session.records, session.tokenizer, config, iteration)
        session.sampler.update([g.problem_index for g in rollouts.finished], scored.correct.mean(dim=1).tolist())
        batch = build_policy_batch(rollouts.finished, session.tokenizer.pad_token_id, iteration,
                                   config.exclude_segments_older_than)
        update = session.trainer.update(batch, scored.rewards)
        session.engine.update_weights(session.model)
    return iteration_report(iteration, rollouts.finished, scored, update, rollouts.tokens_generated,
                            len(session.buffer), time.perf_counter() - started)


def iteration_report(iteration: int, finished: list[Group], scored: ScoredGroups | None, update: dict,
                     tokens_generated: int, parked: int, seconds: float) -> IterationReport:
    """Metrics of one iteration (accuracy and lengths over the responses trained on)."""
    lengths = scored.lengths.flatten().numpy() if scored is not None else np.zeros(0)
    reused = sum(t.tokens_before(iteration) for group in finished for t in group.trajectories)
    extra = {"groups_trained": float(len(finished)), "groups_parked": float(parked)}
    if scored is not None:
        extra |= {"mean_reward": float(scored.rewards.mean()), "length_penalty_weight": scored.length_weight,
                  "repeat_fraction": float(scored.repeated.float().mean()),
                  "truncated_fraction": float(scored.truncated.float().mean())}
    extra |= {name: value for name, value in update.items() if name not in ("loss", "kl")}
    return IterationReport(
        iteration=iteration,
        train_accuracy=float(scored.correct.mean()) if scored is not None else None,
        mean_response_length=float(lengths.mean()) if lengths.size else None,
        p95_response_length=float(np.percentile(lengths, 95)) if lengths.size else None,
        loss=update.get("loss"), kl=update.get("kl"), tokens_generated=tokens_generated, tokens_reused=reused,
        seconds=seconds, extra=extra,
    )
