"""Compiled decoding in the torch engine (rollout_compile): a static cache whose step transformers compiles."""

from __future__ import annotations

import pytest
import torch

from training.rollout.base import EngineSettings, RolloutRequest, SamplingSettings
from training.rollout.placement import compiles_decoding


def test_auto_compiles_on_a_gpu_only_and_on_and_off_win():
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert compiles_decoding("auto", gpu) and not compiles_decoding("auto", cpu)
    assert compiles_decoding("on", cpu) and compiles_decoding("on", gpu)
    assert not compiles_decoding("off", gpu) and not compiles_decoding("off", cpu)
    # rollouts that overlap training: auto leaves them uncompiled, on still compiles
    assert not compiles_decoding("auto", gpu, beside_training=True) and compiles_decoding("on", gpu, True)


def test_the_run_knob_reaches_the_engine(tiny_model_dir):
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.torch_engine import build

    model, tokenizer = load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))
    for mode, compiled in (("on", True), ("off", False), ("auto", torch.cuda.is_available())):  # auto: GPUs only
        config = parse_config(RLConfig, {"model": str(tiny_model_dir), "rollout_compile": mode})
        assert build(model, tokenizer, str(tiny_model_dir), EngineSettings.of_run(config)).compile_decoding is compiled
    with pytest.raises(Exception, match="rollout_compile"):
        parse_config(RLConfig, {"model": str(tiny_model_dir), "rollout_compile": "always"})


def test_a_compiled_cache_is_rounded_up_so_nearby_widths_share_a_compiled_step(tiny_model_dir):
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.torch_engine import STATIC_CACHE_STEP, TorchRolloutEngine

    engine = TorchRolloutEngine(load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir)))
    assert engine._static_room(30, 500) is None  # a CPU call of many new tokens keeps the dynamic cache
    assert engine._static_room(300, 64) == 64  # ... and one of few beside long prompts decodes in place
    engine.compile_decoding = True
    assert STATIC_CACHE_STEP == 256
    assert engine._static_room(12, 500) == 512 - 12  # exactly full
    assert engine._static_room(11, 500) == 512 - 11  # the same 512 positions: the same compiled shapes
    assert engine._static_room(300, 64) == 512 - 300
    assert engine._static_room(30, 500) == 768 - 30  # 530 positions round up to 768


def check_same_samples(plain, compiled, tokenizer, tolerance: float) -> None:
    """Same tokens, log-probs (within `tolerance`) and finish reasons at T = 1 over two calls of other widths and
    row counts, with each row at its own limit."""
    from training.rollout.seeds import stream_seed

    settings = SamplingSettings(max_new_tokens=24, temperature=1.0)
    prompts = [tokenizer(text)["input_ids"] for text in ("Problem: 2+3\nSolution:", "12*12=", "Problem: the sum of "
                                                        "the first ten odd numbers, then its square root\nSolution:")]
    calls = [
        [RolloutRequest(tuple(prompts[0]), n=3, sample_seeds=tuple(stream_seed(1, 0, s) for s in range(3))),
         RolloutRequest(tuple(prompts[2]), n=2, max_new_tokens=9,
                        sample_seeds=tuple(stream_seed(1, 1, s) for s in range(2)))],
        [RolloutRequest(tuple(prompts[1]), n=4, max_new_tokens=17,
                        sample_seeds=tuple(stream_seed(2, 0, s) for s in range(4)))],
    ]
    for requests in calls:
        expected, got = plain.generate(requests, settings), compiled.generate(requests, settings)
        for want_group, got_group, request in zip(expected, got, requests):
            for want, have in zip(want_group, got_group):
                assert have.token_ids == want.token_ids and have.finish_reason == want.finish_reason
                assert len(have.token_ids) <= (request.max_new_tokens or settings.max_new_tokens)
                assert have.logprobs == pytest.approx(want.logprobs, abs=tolerance)
    assert hasattr(compiled.model, "_compiled_call")  # it went through transformers' compiled step
    # logged once each: rows (5 padded to 6 on the grid of compiled row counts) x rounded cache positions
    assert compiled.compiled_shapes == {(6, 256), (4, 256)}


@pytest.mark.slow
def test_compiled_decoding_samples_what_the_dynamic_cache_samples(tiny_model_dir):
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))
    compiled = TorchRolloutEngine(model, tokenizer, own_copy=True)
    compiled.compile_decoding = True
    check_same_samples(TorchRolloutEngine(model, tokenizer), compiled, tokenizer, tolerance=1e-4)
    assert not hasattr(model, "_compiled_call")  # the shared model never was compiled


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (scripts/gpu_smoke.sh runs it)")
def test_compiled_decoding_on_the_gpu_samples_what_the_dynamic_cache_samples(tiny_model_dir):
    """On CUDA, where transformers compiles with CUDA graphs by itself; float32, so both sample alike."""
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))
    gpu = torch.device("cuda")
    compiled = TorchRolloutEngine(model, tokenizer, device=gpu, dtype=torch.float32)
    compiled.compile_decoding = True
    plain = TorchRolloutEngine(model, tokenizer, device=gpu, dtype=torch.float32)
    check_same_samples(plain, compiled, tokenizer, tolerance=1e-3)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU check: on a GPU the trainer's bf16 autocast moves the "
                                                      "sampler KL (the GPU engine test covers compiled decoding there)")
def test_the_rl_loop_trains_with_compiled_decoding_and_samples_what_it_scores(warm_model_dir, tmp_path):
    """rollout_compile on (the GPU default, forced on this CPU) with generate's loop: the same responses as the
    dynamic cache, iteration after iteration of weight updates, and the trainer's log-probs agree with the
    sampler's. (The lean loop's compiled sampler is checked in test_lean_decoding.py.)"""
    from tests.training.loop_runs import reports_per_value

    reports = reports_per_value(warm_model_dir, tmp_path, "rollout_compile", ("off", "on"), rollout_loop="generate")
    assert [report.iteration for report in reports["on"]] == [1, 2, 3]
    assert all(report.extra["sampler_kl"] < 1e-6 for report in reports["on"])
    for compiled, plain in zip(reports["on"], reports["off"]):  # the weights moved: same samples, same updates
        assert compiled.tokens_generated == plain.tokens_generated
        assert compiled.loss == pytest.approx(plain.loss, rel=1e-4, abs=1e-6)


@pytest.mark.slow
def test_a_compiled_engine_follows_weight_updates(tiny_model_dir):
    """A compiled step must read the weights as they are now, not as they were when it was compiled."""
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.torch_engine import TorchRolloutEngine

    model, tokenizer = load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))
    compiled = TorchRolloutEngine(model, tokenizer, own_copy=True)
    compiled.compile_decoding = True
    prompt = tuple(tokenizer("Problem: 7+8\nSolution:")["input_ids"])
    requests = [RolloutRequest(prompt, n=4, sample_seeds=(1, 2, 3, 4))]
    settings = SamplingSettings(max_new_tokens=16, temperature=1.0)
    before = compiled.generate(requests, settings)
    changed = load_model(str(tiny_model_dir))
    with torch.no_grad():
        changed.lm_head.weight.mul_(-3.0)
    compiled.update_weights(changed)
    after = compiled.generate(requests, settings)
    expected = TorchRolloutEngine(changed, tokenizer).generate(requests, settings)  # the new weights' samples
    assert [c.token_ids for c in after[0]] == [c.token_ids for c in expected[0]]
    for have, want in zip(after[0], expected[0]):
        assert have.logprobs == pytest.approx(want.logprobs, abs=1e-4)
    assert [c.token_ids for c in after[0]] != [c.token_ids for c in before[0]]
