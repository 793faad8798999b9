"""The torch engine's lean decoding loop (training.rollout.lean_decoding): the forward pass and the sampler in one
step of fixed shapes. It must sample exactly what Hugging Face `generate` samples from the same streams."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, StaticCache

from training.prompting import prompt_ids
from training.rollout.base import FINISH_LENGTH, FINISH_REPEAT, FINISH_STOP, RolloutRequest, SamplingSettings
from training.rollout.lean_decoding import lean_cache_supported, lean_decode
from training.rollout.placement import keeps_through_training
from training.rollout.repeats import RepeatLimits
from training.rollout.torch_engine import TorchRolloutEngine


def engine(model, tokenizer, lean: bool, compiled: bool = False, segment_steps: int | None = 16):
    built = TorchRolloutEngine(model, tokenizer, own_copy=compiled)  # a compiled step never touches the shared model
    built.lean_decoding, built.compile_decoding, built.segment_steps = lean, compiled, segment_steps
    return built


def mixed_requests(tokenizer) -> list[RolloutRequest]:
    """Prompts of different lengths and limits, one seeded stream per sample: rows end at their EOS, at their own
    limit, or run to the call's longest."""
    problems = ["2+3", "7*8-1", "9-4+6*2", "Problem: the sum of the first ten odd numbers"]
    return [RolloutRequest(prompt_ids(problem, tokenizer), n=3, max_new_tokens=limit,
                           sample_seeds=tuple(100 * index + sample for sample in range(3)))
            for index, (problem, limit) in enumerate(zip(problems, (40, 9, 40, 23)))]


def completions(built, requests, settings):
    return [completion for group in built.generate(requests, settings) for completion in group]


def assert_same(got, want, tolerance: float = 1e-5) -> None:
    assert [(c.token_ids, c.finish_reason) for c in got] == [(c.token_ids, c.finish_reason) for c in want]
    for have, expected in zip(got, want):
        assert have.logprobs == pytest.approx(expected.logprobs, abs=tolerance)


@pytest.mark.parametrize("temperature, top_p", [(1.0, 1.0), (0.7, 0.9), (0.0, 1.0)])
def test_the_lean_loop_samples_what_generate_samples(warm, temperature, top_p):
    model, tokenizer = warm
    settings = SamplingSettings(40, temperature=temperature, top_p=top_p)
    want = completions(engine(model, tokenizer, lean=False), mixed_requests(tokenizer), settings)
    got = completions(engine(model, tokenizer, lean=True), mixed_requests(tokenizer), settings)
    assert_same(got, want)
    if temperature == 1.0:
        assert {c.finish_reason for c in want} == {FINISH_STOP, FINISH_LENGTH}, "rows should end both ways here"
        assert len({c.token_ids for c in want}) > 6, "independent streams should give different samples"


def test_the_lean_loop_really_runs_and_drops_the_rows_that_ended(warm):
    """Its own step runs (one query row per live row, never generate's), and rows leave between segments."""
    model, tokenizer = warm
    rows: list[int] = []
    hook = model.register_forward_pre_hook(lambda module, args, kwargs: rows.append(kwargs["input_ids"].shape[0]),
                                           with_kwargs=True)
    try:
        completions(engine(model, tokenizer, lean=True, segment_steps=4), mixed_requests(tokenizer),
                    SamplingSettings(40, temperature=1.0))
    finally:
        hook.remove()
    assert rows[0] == 12 and min(rows) < 12 and rows == sorted(rows, reverse=True)
    assert len(rows) <= 40  # one forward pass a step, no prefill through the full model (bucketed prefill)


def test_a_repeat_stop_lands_where_generate_puts_it(untrained):
    model, tokenizer = untrained  # greedy decoding of the untrained model loops
    requests = [RolloutRequest(prompt_ids(problem, tokenizer), n=1) for problem in ("2+3", "8-1", "6*7")]
    settings = SamplingSettings(96, temperature=0.0, stop_repeats=RepeatLimits())
    want = completions(engine(model, tokenizer, lean=False), requests, settings)
    got = completions(engine(model, tokenizer, lean=True, segment_steps=8), requests, settings)
    assert_same(got, want)
    assert FINISH_REPEAT in {c.finish_reason for c in want}


def test_only_a_static_cache_of_plain_layers_takes_the_lean_loop(untrained):
    model, _ = untrained
    assert not lean_cache_supported(None) and not lean_cache_supported(DynamicCache(config=model.config))
    assert lean_cache_supported(StaticCache(config=model.config, max_cache_len=32))


@pytest.mark.slow
def test_a_call_the_lean_loop_cannot_take_decodes_with_generate_and_says_so(warm, caplog):
    model, tokenizer = warm
    settings = SamplingSettings(40, temperature=1.0)
    want = completions(engine(model, tokenizer, lean=False), mixed_requests(tokenizer), settings)
    unprefilled = engine(model, tokenizer, lean=True)
    unprefilled.bucket_prefill = False  # no prefilled static cache: generate decodes the call
    with caplog.at_level("WARNING", logger="training.rollout.torch_engine"):
        assert_same(completions(unprefilled, mixed_requests(tokenizer), settings), want)
        completions(unprefilled, mixed_requests(tokenizer), settings)
    assert [record.message for record in caplog.records].count(
        "torch engine: rollout_loop lean needs a static cache of full-attention layers and no images; this "
        "model's calls decode with generate") == 1


def test_a_compiled_lean_step_samples_what_generate_samples_and_follows_weight_updates(warm, untrained):
    """Compiled (inductor on this CPU; CUDA graphs on a GPU) with every row kept to the call's end; after a weight
    update it samples what the new weights sample, not what the compiled ones did."""
    model, tokenizer = warm
    settings = SamplingSettings(40, temperature=1.0)
    compiled = engine(model, tokenizer, lean=True, compiled=True)
    want = completions(engine(model, tokenizer, lean=False), mixed_requests(tokenizer), settings)
    assert_same(completions(compiled, mixed_requests(tokenizer), settings), want, tolerance=1e-4)
    assert compiled._compiled_step is not None and compiled.compiled_shapes == {(12, 256)}
    kept_cache, kept_tokens = compiled._kept.cache, compiled._kept.state.tokens
    changed, _ = untrained
    compiled.update_weights(changed)
    expected = completions(engine(changed, tokenizer, lean=False), mixed_requests(tokenizer), settings)
    got = completions(compiled, mixed_requests(tokenizer), settings)
    assert_same(got, expected, tolerance=1e-4)
    assert [c.token_ids for c in got] != [c.token_ids for c in want]
    # the second call of the same shape decoded in the first one's cache and buffers (a CUDA graph's addresses)
    assert compiled._kept.cache is kept_cache and compiled._kept.state.tokens is kept_tokens


def test_calls_of_many_row_counts_share_the_compiled_step(warm):
    """An RL run's calls change their row count (partial rollouts, the last chunk): after the first shape the step
    compiles once more, with symbolic shapes, and every later count reuses it, sampling what generate samples."""
    from torch._dynamo.utils import counters

    model, tokenizer = warm
    settings = SamplingSettings(12, temperature=1.0)
    compiled, plain = engine(model, tokenizer, lean=True, compiled=True), engine(model, tokenizer, lean=False)
    graphs_before = counters["stats"]["unique_graphs"]
    for count in (4, 1, 2, 3):  # 12, 3, 6 and 9 rows
        requests = mixed_requests(tokenizer)[:count]
        assert_same(completions(compiled, requests, settings), completions(plain, requests, settings),
                    tolerance=1e-4)
    assert counters["stats"]["unique_graphs"] - graphs_before <= 2
    # the 9 rows were padded to 12 (placement.compiled_row_count), whose shape the first call had made
    assert compiled.compiled_shapes == {(12, 256), (3, 256), (6, 256)}


def test_kept_buffers_follow_the_call_shape_and_leave_for_training(warm):
    """A compiled call of another shape replaces the kept cache (freed first); release_for_training drops it."""
    model, tokenizer = warm
    settings = SamplingSettings(12, temperature=1.0)
    compiled = engine(model, tokenizer, lean=True, compiled=True)
    completions(compiled, mixed_requests(tokenizer), settings)
    first = compiled._kept.cache
    assert compiled._kept.nbytes() == sum(layer.keys.nbytes + layer.values.nbytes for layer in first.layers) > 0
    want = completions(engine(model, tokenizer, lean=False), mixed_requests(tokenizer)[:2], settings)
    assert_same(completions(compiled, mixed_requests(tokenizer)[:2], settings), want, tolerance=1e-4)
    assert compiled._kept.cache is not first and compiled._kept.state.tokens.shape[0] == 6
    compiled.release_for_training()  # on a CPU: no CUDA graphs, so nothing is kept for them
    assert compiled._kept.cache is None and compiled._kept.nbytes() == 0
    assert_same(completions(compiled, mixed_requests(tokenizer)[:2], settings), want, tolerance=1e-4)


def test_kept_buffers_small_for_the_gpu_stay_through_training(warm, untrained, monkeypatch):
    """On a GPU whose memory is at least 8 times the kept buffers, they stay through the update (the recorded
    graph replays on their addresses) and the next call samples the new weights in them; larger ones leave for
    the trainer."""
    model, tokenizer = warm
    settings = SamplingSettings(12, temperature=1.0)
    compiled = engine(model, tokenizer, lean=True, compiled=True)
    completions(compiled, mixed_requests(tokenizer), settings)
    kept_cache, kept_tokens, kept_bytes = compiled._kept.cache, compiled._kept.state.tokens, compiled._kept.nbytes()
    monkeypatch.setattr(compiled, "_device_bytes", lambda: 8 * kept_bytes)
    compiled.release_for_training()
    assert compiled._kept.cache is kept_cache
    changed, _ = untrained
    compiled.update_weights(changed)
    want = completions(engine(changed, tokenizer, lean=False), mixed_requests(tokenizer), settings)
    assert_same(completions(compiled, mixed_requests(tokenizer), settings), want, tolerance=1e-4)
    assert compiled._kept.cache is kept_cache and compiled._kept.state.tokens is kept_tokens
    monkeypatch.setattr(compiled, "_device_bytes", lambda: 8 * kept_bytes - 1)
    compiled.release_for_training()
    assert compiled._kept.cache is None


def test_keeping_through_training_needs_a_gpu_and_room():
    assert keeps_through_training(1 << 30, 8 << 30) and not keeps_through_training((1 << 30) + 1, 8 << 30)
    assert not keeps_through_training(1 << 20, 0)  # off a GPU
    assert not keeps_through_training(0, 8 << 30)  # nothing kept


def test_a_compiled_step_that_ran_without_cuda_graphs_is_said_once(warm, monkeypatch, caplog):
    """Torch runs a compiled step without its CUDA graphs in some cases (too many recordings, say) and tells only
    under TORCH_LOGS; the engine says so in its log, once."""
    import training.rollout.torch_engine as torch_engine
    from torch._dynamo.utils import counters

    def skipping(*arguments, **options):
        counters["inductor"]["cudagraph_skips"] += 1
        return lean_decode(*arguments, **options)

    model, tokenizer = warm
    compiled = engine(model, tokenizer, lean=True, compiled=True)
    settings = SamplingSettings(8, temperature=1.0)
    with caplog.at_level("WARNING", logger="training.rollout.torch_engine"):
        completions(compiled, mixed_requests(tokenizer), settings)
        assert not caplog.records
        monkeypatch.setattr(torch_engine, "lean_decode", skipping)
        completions(compiled, mixed_requests(tokenizer), settings)
        completions(compiled, mixed_requests(tokenizer), settings)
    assert [record.message for record in caplog.records] == [
        "torch engine: torch ran the compiled decoding step without CUDA graphs, so every step pays its kernel "
        "launches; TORCH_LOGS=cudagraphs says why"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (scripts/gpu_smoke.sh runs it)")
def test_the_compiled_lean_step_on_the_gpu_samples_what_generate_samples(warm, monkeypatch):
    """CUDA graphs of the whole step; float32 on both sides so that they sample alike."""
    import training.rollout.torch_engine as torch_engine

    lean_calls = []
    monkeypatch.setattr(torch_engine, "lean_decode",
                        lambda *arguments, **options: lean_calls.append(1) or lean_decode(*arguments, **options))
    model, tokenizer = warm
    gpu = torch.device("cuda")
    plain = TorchRolloutEngine(model, tokenizer, device=gpu, dtype=torch.float32)
    compiled = TorchRolloutEngine(model, tokenizer, device=gpu, dtype=torch.float32)
    compiled.lean_decoding = compiled.compile_decoding = True
    settings = SamplingSettings(40, temperature=1.0)
    for _ in range(2):  # the second call replays the recorded graph
        assert_same(completions(compiled, mixed_requests(tokenizer), settings),
                    completions(plain, mixed_requests(tokenizer), settings), tolerance=1e-3)
    assert lean_calls  # the lean loop decoded, not generate


def test_the_run_knob_reaches_the_engine(tiny_model_dir):
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.base import EngineSettings
    from training.rollout.torch_engine import build

    model, tokenizer = load_model(str(tiny_model_dir)), load_tokenizer(str(tiny_model_dir))
    gpu = torch.cuda.is_available()  # auto: lean where decoding is compiled (rollout_compile auto: a GPU)
    for loop, compile_mode, lean in (("lean", "off", True), ("generate", "on", False), ("auto", "auto", gpu),
                                     ("auto", "on", True), ("auto", "off", False)):
        config = parse_config(RLConfig, {"model": str(tiny_model_dir), "rollout_loop": loop,
                                         "rollout_compile": compile_mode})
        assert build(model, tokenizer, str(tiny_model_dir), EngineSettings.of_run(config)).lean_decoding is lean
    with pytest.raises(Exception, match="rollout_loop"):
        parse_config(RLConfig, {"model": str(tiny_model_dir), "rollout_loop": "fast"})


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU check: on a GPU the trainer's bf16 autocast moves the "
                                                      "sampler KL (the GPU step test covers the lean loop there)")
def test_the_rl_loop_on_the_lean_loop_samples_and_trains_as_on_generate(warm_model_dir, tmp_path):
    """rollout_loop lean through 3 iterations of weight updates: the same responses and losses as generate, and
    the trainer scores what the sampler drew."""
    from tests.training.loop_runs import reports_per_value

    reports = reports_per_value(warm_model_dir, tmp_path, "rollout_loop", ("generate", "lean"))
    assert [report.iteration for report in reports["lean"]] == [1, 2, 3]
    assert all(report.extra["sampler_kl"] < 1e-6 for report in reports["lean"])
    for lean, plain in zip(reports["lean"], reports["generate"]):
        assert lean.tokens_generated == plain.tokens_generated and lean.train_accuracy == plain.train_accuracy
        assert lean.loss == pytest.approx(plain.loss, rel=1e-4, abs=1e-6)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a CPU check: on a GPU the trainer's bf16 autocast moves the "
                                                      "sampler KL (the GPU step test covers the lean loop there)")
def test_the_rl_loop_on_the_compiled_lean_loop_trains_on_what_it_sampled(warm_model_dir, tmp_path):
    """rollout_compile on with rollout_loop auto (the GPU default, here through inductor): 3 iterations of weight
    updates, and the trainer's log-probs of every sample agree with the compiled sampler's. Token for token it
    matches generate except where a draw lies within float rounding of a token's edge in the cumulative
    distribution (seen here once, 3.5e-8 away, in iteration 2): the fused sampler rounds differently."""
    from tests.training.loop_runs import reports_per_value

    reports = reports_per_value(warm_model_dir, tmp_path, "rollout_loop", ("auto",), rollout_compile="on")
    assert [report.iteration for report in reports["auto"]] == [1, 2, 3]
    assert all(0 <= report.extra["sampler_kl"] < 1e-6 for report in reports["auto"])
    assert all(report.tokens_generated > 0 for report in reports["auto"])
