"""The RL loop of METHOD.md sections 3 to 7: iterative, synchronous (or one step ahead), one screen long."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from grading.cot_judge.modes import RULE
from training import distributed
from training.batch import build_policy_batch
from training.checkpoint import checkpoint_iteration, complete_checkpoint_dirs, remove_checkpoints
from training.checkpoint_retention import checkpoints_to_remove
from training.collect import RolloutLimits, StreamKey, new_groups
from training.iteration_rollouts import IterationRollouts, roll_out_iteration
from training.config import RLConfig
from training.rollout.base import SamplingSettings
from training.rollout.repeats import RepeatLimits
from training.group_rewards import ScoredGroups, sample_reports, score_groups
from training.session import RunSession, start_session
from training.trajectories import Group, ReplayBuffer
from training.types import (
    IterationReport, PinnedCheckpointsUnknown, PromptRecord, RunPaths, SampleReport, TrainingHooks, TrainingOutcome,
)

REPEAT_LIMITS = RepeatLimits()  # a block of <= 32 tokens repeated >= 4 times over >= 16 tokens


def run(config: RLConfig, records: Sequence[PromptRecord], paths: RunPaths, hooks: TrainingHooks) -> TrainingOutcome:
    """Train until `config.iterations`, resuming from the newest checkpoint; stops early when asked.

    Under torchrun every rank calls this (see training/distributed.py); hooks fire on the main rank only.
    """
    context = distributed.init_from_environment()
    hooks = hooks if context.is_main else TrainingHooks()
    session = start_session(config, records, paths, hooks)
    last_saved = session.next_iteration - 1
    try:
        for iteration in range(session.next_iteration, config.iterations + 1):
            if distributed.broadcast_from_main(hooks.should_stop()):  # asked on the main rank, obeyed by all
                if last_saved < iteration - 1:
                    save_checkpoint(session, iteration - 1, hooks)
                return TrainingOutcome(iterations_done=iteration - 1, stopped_early=True)
            hooks.on_iteration(run_iteration(session, iteration))
            if iteration % config.checkpoint_every_iterations == 0 or iteration == config.iterations:
                save_checkpoint(session, iteration, hooks)
                last_saved = iteration
    finally:
        session.close()
    # resumed past a shortened `iterations`: the checkpoint's iterations are what was done
    return TrainingOutcome(iterations_done=max(config.iterations, session.next_iteration - 1), stopped_early=False)


def save_checkpoint(session: RunSession, iteration: int, hooks: TrainingHooks) -> None:
    """Save (every rank), report it, then remove what keep_last_checkpoints no longer keeps (the main rank: it
    alone writes the checkpoints, and its hooks know which ones jobs still need)."""
    hooks.on_checkpoint(session.save(iteration))
    if session.config.keep_last_checkpoints and session.context.is_main:
        remove_old_checkpoints(session.paths.output_dir, session.config.keep_last_checkpoints, hooks)


def remove_old_checkpoints(output_dir: Path, keep_last: int, hooks: TrainingHooks) -> None:
    """Remove the checkpoints beyond the newest `keep_last` (training.checkpoint_retention) that the hooks approve
    (and have recorded as removed); none when the hooks cannot tell."""
    saved = [checkpoint_iteration(folder) for folder in complete_checkpoint_dirs(output_dir)]
    if not (candidates := checkpoints_to_remove(saved, keep_last, pinned=set())):
        return
    try:
        approved = set(hooks.approve_checkpoint_removals(candidates))
    except PinnedCheckpointsUnknown as error:
        hooks.log(f"keep_last_checkpoints: old checkpoints kept this time ({error})")
        return
    remove_checkpoints(output_dir, [iteration for iteration in candidates if iteration in approved], hooks.log)


def run_iteration(session: RunSession, iteration: int) -> IterationReport:
    """Roll out a full batch of finished groups, score it, update the policy, hand the new weights over.

    With overlap_rollouts the batch was rolled out during the previous iteration's update, and the next one
    is rolled out during this one's (training.rollouts_ahead).
    """
    started = time.perf_counter()
    config = session.config
    rollouts = session.ahead.take(iteration)
    if rollouts is None:
        rollouts = roll_out(session, iteration)
    scored = score_groups(rollouts.finished, session.records, session.tokenizer, config, iteration,
                          session.rewards) if rollouts.finished else None
    samples = stored_samples(session, rollouts.finished, scored)
    batch_results = merge_results(distributed.all_gather_objects(
        rank_results(rollouts, scored, session.buffer, iteration, samples, config.exclude_segments_older_than)))
    if batch_results.scored is not None:
        session.sampler.update(batch_results.problem_indices, batch_results.scored.correct.mean(dim=1).tolist())
    if config.overlap_rollouts and iteration < config.iterations:  # the sampler has this batch's pass rates
        session.ahead.start(iteration + 1, lambda: roll_out(session, iteration + 1, policy_iteration=iteration))
    update = {}
    if batch_results.scored is not None:  # some rank finished a group: all ranks take part in the update
        batch = build_policy_batch(rollouts.finished, session.tokenizer.pad_token_id, iteration,
                                   config.exclude_segments_older_than) if rollouts.finished else None
        session.engine.release_for_training()  # hybrid engines: free rollout memory, onload the trainer
        training_started = time.perf_counter()
        update = session.trainer.update(batch, scored.rewards if scored is not None else None)
        update["train_seconds"] = time.perf_counter() - training_started
    if config.overlap_rollouts:  # the engine keeps the old weights until the rollouts made ahead are done
        update["rollout_wait_seconds"] = session.ahead.wait()
    if batch_results.scored is not None:
        session.engine.update_weights(session.model)
    update |= session.engine.take_phase_seconds()  # hybrid engines: seconds of each switch phase
    update |= judge_counts(session)
    return iteration_report(iteration, batch_results, update, time.perf_counter() - started)


def roll_out(session: RunSession, iteration: int, policy_iteration: int | None = None) -> IterationRollouts:
    """This rank's finished groups for `iteration`, sampled by the engine's current weights: those that started
    `policy_iteration` (default: this iteration)."""
    config, context = session.config, session.context
    return roll_out_iteration(
        session.engine, session.buffer, lambda count, first: draw_groups(session, iteration, count, first),
        share=_share(config.batch_size, context), parked_limit=_share(config.parked_group_limit, context),
        settings=SamplingSettings(max_new_tokens=config.max_response_tokens, temperature=config.temperature,
                                  stop_repeats=REPEAT_LIMITS if config.repeat_penalty > 0 else None),
        limits=RolloutLimits(config.max_response_tokens, config.partial_rollout_token_budget,
                             config.samples_per_problem),
        streams=StreamKey(run_seed=config.seed, iteration=iteration, rank=context.rank),
        policy_iteration=policy_iteration, cancelled=session.ahead.cancelled,
        exclude_segments_older_than=config.exclude_segments_older_than)


def judge_counts(session: RunSession) -> dict[str, float]:
    """Samples the CoT judge graded this iteration and its errors, summed over ranks ({} without a judge)."""
    if session.config.grader_mode == RULE:
        return {}
    counts = distributed.all_gather_objects(session.rewards.take_judge_counts())
    return {name: sum(rank_counts[name] for rank_counts in counts) for name in counts[0]}


def _share(total: int, context) -> int:
    start, stop = distributed.share_bounds(total, context.rank, context.world_size)
    return stop - start


def draw_groups(session: RunSession, iteration: int, count: int, first_position: int) -> list[Group]:
    """This rank's `count` fresh groups; every rank calls it together (the draw is in lockstep).

    Every rank draws all ranks' problems with the same sampler state and generator and keeps its slice.
    """
    context = session.context
    wanted = distributed.all_gather_objects(count)  # fresh problems per rank
    drawn = session.sampler.sample(iteration, sum(wanted), session.numpy_rng) if sum(wanted) else []
    first = sum(wanted[:context.rank])
    return new_groups(drawn[first:first + count], session.prompts, iteration, session.config.samples_per_problem,
                      first_position, context.rank)


def stored_samples(session: RunSession, finished: list[Group], scored: ScoredGroups | None) -> list[SampleReport]:
    """This rank's share of the `stored_samples_per_iteration` responses reported for the sample browser."""
    if scored is None:
        return []
    start, stop = distributed.share_bounds(session.config.stored_samples_per_iteration, session.context.rank,
                                           session.context.world_size)
    return sample_reports(finished, session.records, scored, stop - start)


@dataclass(frozen=True)
class RolloutResults:
    """What the iteration's rollouts measured, on one rank or (merged) on all of them."""

    scored: ScoredGroups | None  # (G, k) tensors of the finished groups; None when none finished
    problem_indices: list[int]  # (G,) problem of each finished group
    tokens_generated: int
    tokens_reused: int
    parked: int  # unfinished groups in the replay buffer (bounded by max_parked_groups)
    samples: list[SampleReport]  # responses kept for the sample browser
    counts: dict[str, float]  # summed over ranks
    oldest_token_iteration: int | None  # of the tokens in the loss; None without any


def rank_results(rollouts: IterationRollouts, scored: ScoredGroups | None, buffer: ReplayBuffer, iteration: int,
                 samples: list[SampleReport], exclude_segments_older_than: int | None = None) -> RolloutResults:
    """This rank's part of the iteration's results; `buffer` holds what waits for the next iteration.

    The policy-version counts cover the tokens the loss trains on: segments older than
    exclude_segments_older_than (as build_policy_batch masks them) are left out."""
    unfinished = sum(not group.finished for group in buffer.groups)
    finished = rollouts.finished
    made = [made_in for group in finished for t in group.trajectories for made_in in t.token_iterations
            if exclude_segments_older_than is None or iteration - made_in <= exclude_segments_older_than]
    reused = rollouts.tokens_carried_over  # from earlier iterations' rollouts (partial rollouts' parked segments)
    counts = {"rollout_rounds": float(rollouts.rounds),
              "tokens_from_older_policies": float(sum(made_in < iteration for made_in in made)),
              "response_tokens_trained": float(len(made)),
              "groups_completed_over_budget": float(rollouts.groups_completed_over_budget),
              "stale_groups_dropped": float(rollouts.stale_groups_dropped),
              "finished_groups_waiting": float(len(buffer) - unfinished),
              "repeat_tokens_saved": float(rollouts.tokens_saved_by_repeat_stop)}
    return RolloutResults(scored=scored, problem_indices=[group.problem_index for group in finished],
                          tokens_generated=rollouts.tokens_generated, tokens_reused=reused, parked=unfinished,
                          samples=samples, counts=counts, oldest_token_iteration=min(made, default=None))


def merge_results(parts: list[RolloutResults]) -> RolloutResults:
    """All ranks' results as one batch (groups in rank order)."""
    scored = [part.scored for part in parts if part.scored is not None]
    merged = None
    if scored:
        merged = ScoredGroups(**{name: torch.cat([getattr(s, name) for s in scored])
                                 for name in ("correct", "rewards", "lengths", "repeated", "truncated")},
                              length_weight=scored[0].length_weight)
    return RolloutResults(scored=merged, problem_indices=[index for part in parts for index in part.problem_indices],
                          tokens_generated=sum(part.tokens_generated for part in parts),
                          tokens_reused=sum(part.tokens_reused for part in parts),
                          parked=sum(part.parked for part in parts),
                          samples=[sample for part in parts for sample in part.samples],
                          counts={name: sum(part.counts[name] for part in parts) for name in parts[0].counts},
                          oldest_token_iteration=min((part.oldest_token_iteration for part in parts
                                                      if part.oldest_token_iteration is not None), default=None))


def iteration_report(iteration: int, results: RolloutResults, update: dict, seconds: float) -> IterationReport:
    """Metrics of one iteration (accuracy and lengths over the responses trained on, on all ranks)."""
    scored = results.scored
    lengths = scored.lengths.flatten().numpy() if scored is not None else np.zeros(0)
    counts = results.counts
    extra = {"groups_trained": float(len(results.problem_indices)), "groups_parked": float(results.parked),
             "rollout_rounds": counts["rollout_rounds"] / max(1, distributed.current_context().world_size),
             "groups_completed_over_budget": counts["groups_completed_over_budget"],
             "stale_groups_dropped": counts["stale_groups_dropped"],
             "finished_groups_waiting": counts["finished_groups_waiting"],
             "repeat_tokens_saved": counts["repeat_tokens_saved"],
             # policy versions inside the trained samples: 0 = all tokens from this iteration's policy
             "policy_version_span": float(iteration - results.oldest_token_iteration)
             if results.oldest_token_iteration is not None else 0.0,
             "old_policy_token_share": counts["tokens_from_older_policies"] / counts["response_tokens_trained"]
             if counts["response_tokens_trained"] else 0.0}
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
        loss=update.get("loss"), kl=update.get("kl"), tokens_generated=results.tokens_generated,
        tokens_reused=results.tokens_reused, seconds=seconds, extra=extra, samples=tuple(results.samples),
    )
