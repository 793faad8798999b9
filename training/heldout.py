"""Accuracy and mean response length of a policy on held-out problems (a quick check inside training)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from training.prompting import decode_response, prompt_ids
from training.rewards import CorrectnessRewards
from grading.judgement import counted_wrong_for_truncation
from training.rollout.base import FINISH_LENGTH, RolloutRequest, SamplingSettings
from training.types import PromptRecord


@dataclass(frozen=True)
class HeldOutResult:
    accuracy: float
    mean_response_tokens: float
    samples: int
    # per problem (in the records' order), each sample's 1/0 correctness and tokens: for paired comparisons
    correct_by_problem: tuple[tuple[float, ...], ...] = ()
    tokens_by_problem: tuple[tuple[float, ...], ...] = ()


def held_out_accuracy(engine, tokenizer, records: Sequence[PromptRecord], samples_per_problem: int,
                      settings: SamplingSettings, correctness: CorrectnessRewards | None = None,
                      truncated_counts_wrong: bool = True) -> HeldOutResult:
    """Mean correctness over `samples_per_problem` responses to each record (graded by a fresh
    CorrectnessRewards, closed after, unless one is given); a response cut off at settings.max_new_tokens is
    wrong under truncated_counts_wrong, as in evaluations."""
    requests = [RolloutRequest(prompt_ids(record.problem, tokenizer), n=samples_per_problem) for record in records]
    outputs = engine.generate(requests, settings)
    pairs = [(record, completion) for record, completions in zip(records, outputs) for completion in completions]
    prompts = [request.prompt_ids for request, completions in zip(requests, outputs) for _ in completions]
    responses = [decode_response(completion.token_ids, tokenizer, prompt)
                 for (_, completion), prompt in zip(pairs, prompts)]
    if correctness is None:
        with CorrectnessRewards() as fresh:
            correct = fresh([record for record, _ in pairs], responses)
    else:
        correct = correctness([record for record, _ in pairs], responses)
    correct = [0.0 if counted_wrong_for_truncation(completion.finish_reason == FINISH_LENGTH, truncated_counts_wrong)
               else score for score, (_, completion) in zip(correct, pairs)]
    lengths = [len(completion.token_ids) for _, completion in pairs]
    bounds = [0]
    for completions in outputs:
        bounds.append(bounds[-1] + len(completions))
    return HeldOutResult(accuracy=sum(correct) / len(correct), mean_response_tokens=sum(lengths) / len(lengths),
                         samples=len(correct),
                         correct_by_problem=tuple(tuple(correct[a:b]) for a, b in zip(bounds, bounds[1:])),
                         tokens_by_problem=tuple(tuple(map(float, lengths[a:b])) for a, b in zip(bounds, bounds[1:])))
