"""Repeat detection ends degenerate responses and leaves healthy ones alone."""

import pytest

from training.rollout.repeats import cut_repeats, first_cut_across, repeated_tail_start, widest_repeat_window


def test_a_long_repeated_block_is_detected_and_cut_after_four_copies():
    healthy = [5, 6, 7, 8]
    degenerate = healthy + [1, 2, 3] * 10
    assert repeated_tail_start(degenerate) == 4
    assert cut_repeats(degenerate) == tuple(healthy + [1, 2, 3] * 4)


def test_a_single_token_loop_is_detected():
    assert cut_repeats([9] + [4] * 20) == (9, 4, 4, 4, 4)


def test_short_or_varied_repetition_is_healthy():
    assert repeated_tail_start([1, 2] * 3) is None  # spans only 6 tokens
    steps = [ord(c) for c in "1+2=3\n3+4=7\n7-5=2\n2+9=11\nAnswer: 11"]
    assert cut_repeats(steps) is None


def test_the_tensor_check_agrees_with_repeated_tail_start_on_every_prefix():
    import random

    import torch

    from training.rollout.repeats import RepeatLimits, repeating_rows

    rng = random.Random(0)
    rows = [[rng.choice([3, 4]) for _ in range(60)], [5] * 20 + [1, 2] * 12, [1, 2, 3] * 10, list(range(60))]
    limits = RepeatLimits()
    for length in range(1, 61):
        ids = torch.tensor([row[:length] for row in rows if len(row) >= length])
        expected = [repeated_tail_start(row[:length]) is not None for row in rows if len(row) >= length]
        assert repeating_rows(ids, limits).tolist() == expected, length


def test_a_repeating_model_stops_at_the_repeat_not_at_the_segment_end(tiny_model_dir):
    """Greedy decoding of the untrained tiny model falls into loops; with repeat stopping it ends there."""
    from training.collect import RolloutLimits, collect_rollouts, new_groups
    from training.models.loading import load_model, load_tokenizer
    from training.prompting import prompt_ids
    from training.rollout.base import FINISH_REPEAT, RolloutRequest, SamplingSettings
    from training.rollout.repeats import RepeatLimits
    from training.rollout.torch_engine import TorchRolloutEngine

    tokenizer = load_tokenizer(str(tiny_model_dir))
    engine = TorchRolloutEngine(load_model(str(tiny_model_dir)), tokenizer)
    requests = [RolloutRequest(prompt_ids(f"{digit}+{digit}", tokenizer)) for digit in range(4)]
    free = engine.generate(requests, SamplingSettings(128, temperature=0.0))
    stopped = engine.generate(requests, SamplingSettings(128, temperature=0.0, stop_repeats=RepeatLimits()))
    for whole, [cut] in zip(free, stopped):
        assert cut.finish_reason == FINISH_REPEAT and len(cut.token_ids) < 128
        assert whole[0].token_ids[:len(cut.token_ids)] == cut.token_ids  # the same tokens, up to the stop
        assert repeated_tail_start(cut.token_ids) is not None  # it stopped at a repeat ...
        assert repeated_tail_start(cut.token_ids[:-1]) is None  # ... the first moment one appeared
    prompts = [request.prompt_ids for request in requests]
    collected = collect_rollouts(engine, new_groups(range(4), prompts, 1, 1),
                                 SamplingSettings(128, temperature=0.0, stop_repeats=RepeatLimits()),
                                 RolloutLimits(128, None, 1), iteration=1)
    assert collected.tokens_saved_by_repeat_stop == sum(128 - len(c[0].token_ids) for c in stopped)
    assert collected.tokens_generated + collected.tokens_saved_by_repeat_stop == 4 * 128


@pytest.mark.slow
def test_vllm_stops_a_repeating_model_at_the_repeat_inside_its_decoding_loop(tiny_model_dir):
    """The same greedy loops on vLLM: its logits processor ends each response where the torch engine's check does."""
    import importlib.util
    from training.rollout.base import EngineSettings

    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not installed")
    from training.models.loading import load_model, load_tokenizer
    from training.prompting import prompt_ids
    from training.rollout.base import FINISH_REPEAT, RolloutRequest, SamplingSettings
    from training.rollout.repeats import RepeatLimits
    from training.rollout.torch_engine import TorchRolloutEngine
    from training.rollout.vllm_engine import build

    tokenizer, model = load_tokenizer(str(tiny_model_dir)), load_model(str(tiny_model_dir))
    requests = [RolloutRequest(prompt_ids(f"{digit}+{digit}", tokenizer)) for digit in range(4)]
    settings = SamplingSettings(128, temperature=0.0, stop_repeats=RepeatLimits())
    engine = build(model, tokenizer, str(tiny_model_dir), EngineSettings(rollout_dtype="float32"))
    try:
        from_vllm = engine.generate(requests, settings)
        free = engine.generate(requests, SamplingSettings(128, temperature=0.0))
    finally:
        engine.close()
    from_torch = TorchRolloutEngine(model, tokenizer).generate(requests, settings)
    for [ours], [reference], [whole] in zip(from_vllm, from_torch, free):
        assert ours.finish_reason == FINISH_REPEAT and len(ours.token_ids) < 128
        assert ours.token_ids == reference.token_ids == whole.token_ids[:len(ours.token_ids)]


def test_the_rl_loop_stops_repeats_only_with_a_penalty_and_subtracts_it(tiny_model_dir, tmp_path):
    """The untrained tiny model at a low temperature loops: repeat_penalty > 0 turns the stop on, the iteration
    metrics count the tokens it saved, and every repeated response loses the penalty from its reward."""
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(8, seed=3)]
    reports = {}
    for penalty in (0.0, 0.5):
        config = parse_config(RLConfig, dict(model=str(tiny_model_dir), iterations=1, batch_size=4,
                                             samples_per_problem=2, max_response_tokens=64, temperature=0.05,
                                             length_penalty_weight=0.0, repeat_penalty=penalty))
        found = []
        run(config, records, RunPaths(tmp_path / str(penalty), tmp_path / "models"),
            TrainingHooks(on_iteration=found.append))
        reports[penalty] = found[0]
    off, on = reports[0.0].extra, reports[0.5].extra
    assert off["repeat_fraction"] == 0.0 and off["repeat_tokens_saved"] == 0.0  # no penalty: nothing stops early
    assert on["repeat_fraction"] > 0.0 and on["repeat_tokens_saved"] > 0.0
    # rewards = correctness - 0.5 per repeated response (no length reward here)
    assert on["mean_reward"] == pytest.approx(reports[0.5].train_accuracy - 0.5 * on["repeat_fraction"], abs=1e-6)
    assert reports[0.5].tokens_generated + on["repeat_tokens_saved"] <= 8 * 64


def test_a_repeat_straddling_a_segment_start_is_cut_where_it_first_showed():
    """10 distinct tokens, 20 copies of one, then recovery: a segment starting after 15 tokens holds only 15
    copies, fewer than the 16-token span; the whole response shows the repeat first after 26 tokens."""
    response = list(range(100, 110)) + [7] * 20 + list(range(200, 230))
    assert widest_repeat_window() == 128  # 4 copies of a 32-token block
    assert first_cut_across(response, 15) == tuple(response[:14])  # cut after min_repeats copies, as cut_repeats
    assert first_cut_across(response, 40) is None  # the repeat ended before that segment began
    assert first_cut_across(list(range(60)), 15) is None
