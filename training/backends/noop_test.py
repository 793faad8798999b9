"""The no-op test engine: writes synthetic iterations and trains nothing.

Selected only when a run's config says `trainer_backend: noop-test`; it exists so
the job plumbing (claiming, progress rows, cancellation, failure capture) can be
tested without a model. Its metrics are synthetic and marked so in `extra`.
"""

from __future__ import annotations

import random
import time
from typing import Sequence

from training.config import RLConfig
from training.types import IterationReport, PromptRecord, RunPaths, SampleReport, TrainingHooks, TrainingOutcome

SECONDS_PER_ITERATION = 0.05


def run(config: RLConfig, prompts: Sequence[PromptRecord], paths: RunPaths, hooks: TrainingHooks) -> TrainingOutcome:
    """Report `config.iterations` synthetic iterations, stopping early when asked."""
    if not prompts:
        raise ValueError("the prompt set is empty: add prompts before launching a run")
    rng = random.Random(config.seed)
    hooks.log(f"noop-test engine: {config.iterations} synthetic iterations over {len(prompts)} prompts")
    for iteration in range(1, config.iterations + 1):
        if hooks.should_stop():
            return TrainingOutcome(iterations_done=iteration - 1, stopped_early=True)
        time.sleep(SECONDS_PER_ITERATION)
        responses = config.batch_size * config.samples_per_problem
        mean_length = min(config.max_response_tokens, 20.0 + 2.0 * iteration + rng.random())
        hooks.on_iteration(IterationReport(
            iteration=iteration,
            train_accuracy=round(min(1.0, 0.1 + 0.02 * iteration), 4),
            mean_response_length=mean_length,
            p95_response_length=min(config.max_response_tokens, mean_length * 1.5),
            loss=1.0 / iteration,
            kl=0.0,
            tokens_generated=int(responses * mean_length),
            tokens_reused=0,
            seconds=SECONDS_PER_ITERATION,
            extra={"synthetic": 1.0},
            samples=synthetic_samples(config, prompts, iteration, rng),
        ))
    return TrainingOutcome(iterations_done=config.iterations, stopped_early=False)


def synthetic_samples(config: RLConfig, prompts: Sequence[PromptRecord], iteration: int,
                      rng: random.Random) -> tuple[SampleReport, ...]:
    """Up to `stored_samples_per_iteration` made-up responses, k per problem, cycling through the prompts."""
    count = min(config.stored_samples_per_iteration, config.batch_size * config.samples_per_problem)
    samples = []
    for position in range(count):
        record = prompts[(iteration + position // config.samples_per_problem) % len(prompts)]
        tokens = rng.randint(1, config.max_response_tokens)
        correct = rng.random() < min(1.0, 0.1 + 0.02 * iteration)
        samples.append(SampleReport(
            prompt_id=record.prompt_id, problem=record.problem, sample_index=position % config.samples_per_problem,
            response=f"synthetic response {position} of iteration {iteration}", reward=float(correct),
            correct=correct, response_tokens=tokens, truncated=tokens == config.max_response_tokens, repeated=False))
    return tuple(samples)
