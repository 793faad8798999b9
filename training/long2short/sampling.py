"""Sample each problem n times from a model and judge every response (the data of rejection sampling and DPO)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from grading.judgement import counted_wrong_for_truncation
from training.long2short.base import Long2ShortHooks, Long2ShortJob, Long2ShortStopped, parent_rewards, sampling_limit
from training.rollout.base import EngineSettings
from training.types import PromptRecord

SEQUENCES_PER_CALL = 256  # responses per engine call; between calls the job may stop and reports progress


@dataclass(frozen=True)
class JudgedSample:
    """One sampled response, its length in tokens (end-of-sequence included) and whether it is correct."""

    prompt_id: str
    response: str
    response_tokens: int
    correct: bool
    truncated: bool  # hit max_response_tokens without ending
    token_ids: tuple[int, ...] = ()  # the response as sampled (end-of-sequence included where it ended)


def sample_parent(model, tokenizer, job: Long2ShortJob, config, hooks: Long2ShortHooks) -> list[list[JudgedSample]]:
    """sample_and_judge of the job's records as the parent run would: its rollout engine, its response limit
    unless config.max_response_tokens sets one, and its grader; config: a sampling method's (samples_per_problem,
    max_response_tokens, temperature, seed)."""
    return sample_and_judge(model, tokenizer, str(job.parent_model_path), job.records, config.samples_per_problem,
                            sampling_limit(config.max_response_tokens, job), config.temperature, config.seed,
                            str(job.parent_config.get("rollout_engine", "torch")), hooks, parent_rewards(job))


def response_ids(text: str, tokenizer) -> tuple[int, ...]:
    """A response given as text (not as sampled tokens): its tokens, then end-of-sequence."""
    return tuple(tokenizer(text, add_special_tokens=False).input_ids) + (tokenizer.eos_token_id,)


def sample_and_judge(model, tokenizer, model_path: str, records: Sequence[PromptRecord], samples_per_problem: int,
                     max_response_tokens: int, temperature: float, seed: int, rollout_engine: str = "torch",
                     hooks: Long2ShortHooks | None = None, correctness=None) -> list[list[JudgedSample]]:
    """For each record, in order, its `samples_per_problem` judged responses, in the order drawn.

    correctness: the grader (training.rewards.CorrectnessRewards; the parent run's, base.parent_rewards), closed
    here at the end; None: the rule verifier with flexible extraction.

    Records go to the rollout engine in chunks of about SEQUENCES_PER_CALL responses; sample j of record i draws
    from stream_seed(seed, i, j) whatever the chunking. A response cut off at max_response_tokens is wrong (it
    gave no final answer, and as a target it would teach not stopping). hooks.progress gets the fraction of
    records done, and hooks.should_stop is checked between chunks.
    """
    from training.prompting import prompt_ids
    from training.rollout import rollout_engines
    from training.rewards import CorrectnessRewards
    from training.rollout.base import SamplingSettings

    if samples_per_problem < 1 or max_response_tokens < 1:
        raise ValueError(f"samples_per_problem ({samples_per_problem}) and max_response_tokens "
                         f"({max_response_tokens}) must be at least 1")
    hooks = hooks or Long2ShortHooks()
    engine = rollout_engines.get(rollout_engine)(model, tokenizer, model_path, EngineSettings(seed=seed))
    per_call = max(1, SEQUENCES_PER_CALL // samples_per_problem)
    judged: list[list[JudgedSample]] = []
    correctness = correctness or CorrectnessRewards()
    try:
        for start in range(0, len(records), per_call):
            if hooks.should_stop():
                raise Long2ShortStopped(f"stopped while sampling, after {start} of {len(records)} problems")
            chunk = records[start:start + per_call]
            settings = SamplingSettings(max_new_tokens=max_response_tokens, temperature=temperature, seed=seed)
            requests = [_request(prompt_ids(record.problem, tokenizer), samples_per_problem, seed, start + offset)
                        for offset, record in enumerate(chunk)]
            judged.extend(_judge(chunk, requests, engine.generate(requests, settings), tokenizer, correctness))
            hooks.progress(len(judged) / len(records))
    finally:
        engine.close()
        correctness.close()
    return judged


def _request(prompt: tuple[int, ...], samples: int, seed: int, record_index: int):
    from training.rollout.base import RolloutRequest
    from training.rollout.seeds import stream_seed

    return RolloutRequest(prompt_ids=prompt, n=samples,
                          sample_seeds=tuple(stream_seed(seed, record_index, sample) for sample in range(samples)))


def _judge(records: Sequence[PromptRecord], requests: list, completions: list[list], tokenizer,
           correctness) -> list[list[JudgedSample]]:
    """Decode and verify each record's completions (one verifier call for the whole chunk)."""
    from training.prompting import decode_response
    from training.rollout.base import FINISH_LENGTH

    flat_records = [record for record, group in zip(records, completions) for _ in group]
    flat = [completion for group in completions for completion in group]
    responses = [decode_response(completion.token_ids, tokenizer, request.prompt_ids)
                 for request, group in zip(requests, completions) for completion in group]
    rewards = iter(correctness(flat_records, responses))
    texts = iter(zip(flat, responses))
    judged = []
    for record, group in zip(records, completions):
        samples = []
        for _ in group:
            completion, response = next(texts)
            truncated = completion.finish_reason == FINISH_LENGTH
            samples.append(JudgedSample(prompt_id=record.prompt_id, response=response,
                                        response_tokens=len(completion.token_ids),
                                        correct=next(rewards) > 0.5  # long2short: a cut-off sample is never kept
                                        and not counted_wrong_for_truncation(truncated, True), truncated=truncated,
                                        token_ids=tuple(completion.token_ids)))
        judged.append(samples)
    return judged
