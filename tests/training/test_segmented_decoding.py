"""The torch engine decodes a call in segments and drops the rows that ended between them: the tokens, log-probs
and finish reasons of one uninterrupted call, with fewer rows computed."""

from __future__ import annotations

import copy

import torch

from training.prompting import prompt_ids
from training.rollout.base import FINISH_LENGTH, FINISH_REPEAT, FINISH_STOP, RolloutRequest, SamplingSettings
from training.rollout.repeats import RepeatLimits
from training.rollout.torch_engine import TorchRolloutEngine


def sample(model, tokenizer, segment_steps: int | None, requests, settings):
    engine = TorchRolloutEngine(model, tokenizer)
    engine.segment_steps = segment_steps
    return [completion for group in engine.generate(requests, settings) for completion in group]


def mixed_requests(tokenizer) -> list[RolloutRequest]:
    """Prompts of different lengths and limits: rows end at their EOS, at their own limit, or run on."""
    problems = ["2+3", "7*8-1", "9-4+6*2", "1+1"]
    return [RolloutRequest(prompt_ids(problem, tokenizer), n=4, max_new_tokens=limit)
            for problem, limit in zip(problems, (40, 9, 40, 23))]


def test_segments_give_the_tokens_log_probs_and_finish_reasons_of_one_call(warm):
    model, tokenizer = warm
    settings = SamplingSettings(40, temperature=1.0, seed=11)
    whole = sample(model, tokenizer, None, mixed_requests(tokenizer), settings)
    segmented = sample(model, tokenizer, 4, mixed_requests(tokenizer), settings)
    assert [c.token_ids for c in segmented] == [c.token_ids for c in whole]
    assert [c.finish_reason for c in segmented] == [c.finish_reason for c in whole]
    assert {c.finish_reason for c in whole} == {FINISH_STOP, FINISH_LENGTH}, "rows should end both ways here"
    for one, other in zip(whole, segmented):
        assert torch.allclose(torch.tensor(other.logprobs), torch.tensor(one.logprobs), atol=1e-5)


def test_a_repeat_stop_lands_where_one_call_puts_it(untrained):
    model, tokenizer = untrained  # greedy decoding of the untrained model loops
    requests = [RolloutRequest(prompt_ids(problem, tokenizer), n=1) for problem in ("2+3", "8-1", "6*7")]
    settings = SamplingSettings(96, temperature=0.0, stop_repeats=RepeatLimits())
    whole = sample(model, tokenizer, None, requests, settings)
    segmented = sample(model, tokenizer, 8, requests, settings)
    assert [(c.token_ids, c.finish_reason) for c in segmented] == [(c.token_ids, c.finish_reason) for c in whole]
    assert FINISH_REPEAT in {c.finish_reason for c in whole}


def rows_per_step(model, tokenizer, segment_steps: int | None) -> list[int]:
    """The rows of every forward pass of the model in one engine call (the prefill's first, then one per step)."""
    rows: list[int] = []
    hook = model.register_forward_pre_hook(lambda module, args, kwargs: rows.append(kwargs["input_ids"].shape[0]),
                                           with_kwargs=True)
    try:
        settings = SamplingSettings(40, temperature=1.0, seed=11)
        sample(model, tokenizer, segment_steps, mixed_requests(tokenizer), settings)
    finally:
        hook.remove()
    return rows


def test_rows_that_ended_leave_the_batch(warm):
    whole, segmented = rows_per_step(*warm, segment_steps=None), rows_per_step(*warm, segment_steps=4)
    assert set(whole) == {16} and segmented[0] == 16 and min(segmented) < 16
    assert sum(segmented) < 0.6 * sum(whole), (sum(segmented), sum(whole))  # 163 against 368 here


def test_the_checkpoints_own_generation_config_does_not_reach_the_sampler(warm):
    """A generation_config.json may ask for a repetition penalty or banned n-grams; generate would apply them before
    the seeded sampler draws, so rollouts would leave the policy the trainer scores. The engine samples, and scores,
    softmax(z / T) whatever that file says."""
    from training.trainer.logprobs import token_logprobs

    model, tokenizer = warm
    settings = SamplingSettings(40, temperature=1.0, seed=11)
    plain = sample(model, tokenizer, 4, mixed_requests(tokenizer), settings)
    own = model.generation_config
    penalised = copy.deepcopy(own)
    penalised.repetition_penalty, penalised.no_repeat_ngram_size, penalised.suppress_tokens = 1.3, 2, [46, 47]
    model.generation_config = penalised
    try:
        got = sample(model, tokenizer, 4, mixed_requests(tokenizer), settings)
        assert model.generation_config is penalised  # the model keeps its own for what it saves
    finally:
        model.generation_config = own
    assert [(c.token_ids, c.finish_reason) for c in got] == [(c.token_ids, c.finish_reason) for c in plain]
    prompt = mixed_requests(tokenizer)[0].prompt_ids
    completion = got[0]
    ids = torch.tensor([list(prompt) + list(completion.token_ids)])
    scored = token_logprobs(model, ids, torch.ones_like(ids))[0, len(prompt) - 1:]
    assert torch.allclose(scored, torch.tensor(completion.logprobs), atol=1e-5)
