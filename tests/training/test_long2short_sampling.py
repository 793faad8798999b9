"""sample_and_judge: n judged samples per problem, in order, reproducible from the seed."""

from __future__ import annotations

import pytest

from training.long2short import sampling
from training.long2short.base import Long2ShortHooks
from training.long2short.sampling import sample_and_judge
from training.models.loading import load_model, load_tokenizer
from training.prompting import decode_response
from training.rewards import CorrectnessRewards
from training.tasks.arithmetic import generate
from training.types import PromptRecord


@pytest.fixture
def records() -> tuple[PromptRecord, ...]:
    return tuple(PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer)
                 for p in generate(3, seed=5, difficulties=("easy",)))


def test_it_returns_n_judged_samples_per_problem_in_order(warm_model_dir, records, monkeypatch):
    monkeypatch.setattr(sampling, "SEQUENCES_PER_CALL", 4)  # n=4: one problem per engine call
    tokenizer, model = load_tokenizer(str(warm_model_dir)), load_model(str(warm_model_dir))
    progress = []
    judged = sample_and_judge(model, tokenizer, str(warm_model_dir), records, samples_per_problem=4,
                              max_response_tokens=12, temperature=1.0, seed=7,
                              hooks=Long2ShortHooks(progress=progress.append))
    assert [[sample.prompt_id for sample in samples] for samples in judged] == [[r.prompt_id] * 4 for r in records]
    assert progress == pytest.approx([1 / 3, 2 / 3, 1.0])
    with CorrectnessRewards() as correctness:
        rewards = [correctness([record] * len(samples), [sample.response for sample in samples])
                   for record, samples in zip(records, judged)]
    for samples, sample_rewards in zip(judged, rewards):
        for sample, reward in zip(samples, sample_rewards):
            assert 1 <= sample.response_tokens <= 12
            # the tokens as sampled travel with the text (the SFT and DPO targets), end-of-sequence only if it ended
            assert len(sample.token_ids) == sample.response_tokens
            assert decode_response(sample.token_ids, tokenizer) == sample.response
            assert (sample.token_ids[-1] == tokenizer.eos_token_id) == (not sample.truncated)
            assert sample.correct == (reward == 1.0 and not sample.truncated)  # a cut-off one never is
            ended = len(tokenizer(sample.response, add_special_tokens=False).input_ids) + 1 == sample.response_tokens
            assert sample.truncated == (not ended), sample  # an ended response is its tokens plus end-of-sequence
            if sample.truncated:
                assert sample.response_tokens == 12

    again = sample_and_judge(model, tokenizer, str(warm_model_dir), records, 4, 12, 1.0, seed=7)
    assert again == judged
    other_seed = sample_and_judge(model, tokenizer, str(warm_model_dir), records, 4, 12, 1.0, seed=8)
    assert other_seed != judged


def test_hooks_within_a_stage_map_its_progress_onto_the_stage_share():
    reported = []
    stage = Long2ShortHooks(progress=reported.append).within(0.5, 0.9)
    stage.progress(0.0)
    stage.progress(0.5)
    stage.progress(1.0)
    assert reported == pytest.approx([0.5, 0.7, 0.9])


def test_a_response_cut_off_at_the_limit_is_never_a_correct_sample(tiny_model_dir):
    """Cut off after writing the answer: the verifier passes the text, but the sample is wrong (it cannot be
    the kept shortest response or DPO's chosen one); the same text that ended is correct."""
    from training.rollout.base import FINISH_LENGTH, FINISH_STOP, Completion

    tokenizer = load_tokenizer(str(tiny_model_dir))
    record = PromptRecord(prompt_id="p", problem="3+4", answer="7")
    ids = tuple(tokenizer("Answer: 7", add_special_tokens=False).input_ids)
    completions = [[Completion(ids, (0.0,) * len(ids), FINISH_LENGTH),
                    Completion(ids + (tokenizer.eos_token_id,), (0.0,) * (len(ids) + 1), FINISH_STOP)]]
    with CorrectnessRewards() as correctness:
        cut, ended = sampling._judge([record], [sampling._request((), 2, 0, 0)], completions, tokenizer,
                                     correctness)[0]
        assert correctness([record], [cut.response]) == [1.0]  # the text alone would pass
    assert (cut.truncated, cut.correct) == (True, False)
    assert (ended.truncated, ended.correct) == (False, True)
