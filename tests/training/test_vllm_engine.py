"""The vLLM rollout engine against the torch engine on the tiny model (real vLLM, CPU is enough)."""

from __future__ import annotations

import copy
import importlib.util
from training.rollout.base import EngineSettings

import pytest
import torch

from training.rollout.base import FINISH_LENGTH, FINISH_STOP, RolloutRequest, SamplingSettings
from training.rollout.vllm_engine import weight_buckets
from training.tasks.arithmetic import direct, generate, step_by_step

requires_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed")

GREEDY = SamplingSettings(max_new_tokens=40, temperature=0.0)
LOGPROB_TOLERANCE = 2e-3


def fit(model, tokenizer, texts: list[str], steps: int, learning_rate: float = 2e-3) -> float:
    """A short supervised fit on whole texts ending in EOS, so greedy choices are decisive; returns the loss."""
    batch = tokenizer([text + tokenizer.eos_token for text in texts], padding=True, return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss.item()


def training_problems():
    """Eight problems, a few hundred tokens of step-by-step text: ~10 s of fitting on one core."""
    return generate(8, seed=1, difficulties=("easy", "medium"))


def problem_prompt(tokenizer, problem) -> tuple[int, ...]:
    return tuple(tokenizer(f"Problem: {problem.problem}\nSolution:")["input_ids"])


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    """The tiny preset (in a temporary directory) fitted on step-by-step arithmetic in memory only:
    (model, tokenizer, the preset's directory, which still holds the unfitted weights)."""
    from training.models.loading import load_model, load_tokenizer

    directory = str(tiny_model_dir)
    model, tokenizer = load_model(directory), load_tokenizer(directory)
    torch.manual_seed(0)
    texts = [f"Problem: {p.problem}\nSolution: {step_by_step(p)}" for p in training_problems()]
    loss = fit(model, tokenizer, texts, 80)
    assert loss < 0.5, f"the fit did not take (loss {loss:.2f}); greedy comparisons would be fragile"
    return model, tokenizer, directory


@pytest.fixture(scope="module")
def engines(tiny):
    """(vllm engine serving the fitted weights, torch engine over the same model object)."""
    try:
        import vllm  # noqa: F401
    except ImportError as error:  # a broken install (torchvision, triton) skips rather than fails
        pytest.skip(f"vllm does not import: {error}")
    from training.rollout.torch_engine import TorchRolloutEngine
    from training.rollout.vllm_engine import build

    model, tokenizer, directory = tiny
    # float32 sampling, as the trainer's: on a GPU (the smoke run) vLLM would otherwise sample in 16 bits
    vllm_engine = build(model, tokenizer, directory, EngineSettings(rollout_dtype="float32"))
    yield vllm_engine, TorchRolloutEngine(model, tokenizer)
    vllm_engine.close()


@pytest.fixture(scope="module")
def prompts(tiny):
    _, tokenizer, _ = tiny
    seen = training_problems()[:3]
    unseen = generate(3, seed=7, difficulties=("easy", "medium"))
    # A prompt longer than a KV block or two: stale prefix-cache blocks would show on it after an update.
    solved = "\n".join(f"Problem: {p.problem}\nSolution: {step_by_step(p)}"
                       for p in generate(12, seed=3, difficulties=("medium",)))
    long = tuple(tokenizer(solved)["input_ids"]) + problem_prompt(tokenizer, unseen[0])
    return [problem_prompt(tokenizer, problem) for problem in seen + unseen] + [long]


@pytest.mark.slow
@requires_vllm
def test_the_engine_compiles_nothing_while_another_thread_trains(engines, prompts):
    """The first test to use the engine: its first generate, in a background thread as overlapping rollouts
    run it, must not compile (torch reports "compiling" to every thread meanwhile, and an AdamW step in the
    training thread then takes another path). The engine compiled its log-prob kernel when it was built."""
    import threading

    vllm_engine, _ = engines
    requests = [RolloutRequest(prompt, n=2, sample_seeds=(1, 2)) for prompt in prompts[:2]]
    worker = threading.Thread(target=vllm_engine.generate,
                              args=(requests, SamplingSettings(temperature=1.0, max_new_tokens=4)))
    seen_compiling = False
    worker.start()
    while worker.is_alive():
        seen_compiling |= torch.compiler.is_compiling()
    worker.join()
    assert not seen_compiling


def greedy_requests(prompts):
    # one request with its own shorter limit, to check per-request limits and order
    return [RolloutRequest(prompt, n=1, max_new_tokens=5 if index == 1 else None)
            for index, prompt in enumerate(prompts)]


@pytest.mark.slow
@requires_vllm
def test_greedy_tokens_match_the_torch_engine(engines, prompts, tiny):
    vllm_engine, torch_engine = engines
    requests = greedy_requests(prompts)
    from_vllm = vllm_engine.generate(requests, GREEDY)
    from_torch = torch_engine.generate(requests, GREEDY)
    assert [len(group) for group in from_vllm] == [1] * len(requests)
    assert [g[0].token_ids for g in from_vllm] == [g[0].token_ids for g in from_torch]
    assert [g[0].finish_reason for g in from_vllm] == [g[0].finish_reason for g in from_torch]
    eos = tiny[1].eos_token_id
    stopped = [group[0] for group in from_vllm if group[0].finish_reason == FINISH_STOP]
    assert stopped, "the fitted model should end some answers with EOS"
    assert all(c.token_ids[-1] == eos and eos not in c.token_ids[:-1] for c in stopped)
    assert len(from_vllm[1][0].token_ids) == 5 and from_vllm[1][0].finish_reason == FINISH_LENGTH


@pytest.mark.slow
@requires_vllm
def test_greedy_logprobs_are_close_to_the_torch_engine(engines, prompts):
    vllm_engine, torch_engine = engines
    requests = greedy_requests(prompts)
    for ours, reference in zip(vllm_engine.generate(requests, GREEDY), torch_engine.generate(requests, GREEDY)):
        assert len(ours[0].logprobs) == len(ours[0].token_ids)
        assert torch.allclose(torch.tensor(ours[0].logprobs), torch.tensor(reference[0].logprobs),
                              atol=LOGPROB_TOLERANCE)


@pytest.mark.slow
@requires_vllm
def test_greedy_with_n_repeats_the_single_answer(engines, prompts):
    vllm_engine, _ = engines
    [group] = vllm_engine.generate([RolloutRequest(prompts[0], n=3)], GREEDY)
    assert len(group) == 3 and len({c.token_ids for c in group}) == 1


@pytest.mark.slow
@requires_vllm
def test_update_weights_serves_the_new_weights(engines, prompts, tiny):
    vllm_engine, torch_engine = engines
    model, tokenizer, _ = tiny
    requests = greedy_requests(prompts)
    before = vllm_engine.generate(requests, GREEDY)
    changed = copy.deepcopy(model)
    fit(changed, tokenizer, [f"Problem: {p.problem}\nSolution: {direct(p)}" for p in training_problems()], 20)
    vllm_engine.update_bucket_bytes = 1024**2  # several blobs, one per decoder layer
    try:
        vllm_engine.update_weights(changed)
        after = vllm_engine.generate(requests, GREEDY)
        torch_engine.update_weights(changed)
        expected = torch_engine.generate(requests, GREEDY)
    finally:
        torch_engine.update_weights(model)
        vllm_engine.update_weights(model)
    assert [g[0].token_ids for g in after] == [g[0].token_ids for g in expected]
    assert [g[0].token_ids for g in after] != [g[0].token_ids for g in before]
    assert vllm_engine.last_update_seconds is not None and vllm_engine.last_update_seconds > 0
    assert [g[0].token_ids for g in vllm_engine.generate(requests, GREEDY)] == [g[0].token_ids for g in before]


@pytest.mark.slow
@requires_vllm
def test_sampling_returns_n_completions_with_valid_finish_reasons(engines, prompts, tiny):
    vllm_engine, _ = engines
    eos = tiny[1].eos_token_id
    settings = SamplingSettings(max_new_tokens=12, temperature=1.5, top_p=0.95)
    requests = [RolloutRequest(prompts[0], n=4), RolloutRequest(prompts[3], n=2, max_new_tokens=6),
                RolloutRequest(prompts[4], n=5)]
    groups = vllm_engine.generate(requests, settings)
    assert [len(group) for group in groups] == [4, 2, 5]
    for request, group in zip(requests, groups):
        limit = request.max_new_tokens or settings.max_new_tokens
        for completion in group:
            assert len(completion.logprobs) == len(completion.token_ids)
            assert all(logprob <= 0 for logprob in completion.logprobs)
            if completion.finish_reason == FINISH_STOP:
                assert completion.token_ids[-1] == eos and eos not in completion.token_ids[:-1]
            else:
                assert completion.finish_reason == FINISH_LENGTH
                assert len(completion.token_ids) == limit and eos not in completion.token_ids
    assert len({c.token_ids for group in groups for c in group}) > 1


@pytest.mark.slow
@requires_vllm
def test_sampled_logprobs_follow_the_tempered_distribution(engines, prompts, tiny):
    vllm_engine, _ = engines
    model = tiny[0]
    settings = SamplingSettings(max_new_tokens=10, temperature=1.5)
    [group] = vllm_engine.generate([RolloutRequest(prompts[3], n=2)], settings)
    was_training = model.training
    model.eval()
    try:
        for completion in group:
            with torch.no_grad():
                logits = model(torch.tensor([prompts[3] + completion.token_ids])).logits[0, len(prompts[3]) - 1:-1]
            tempered = (logits / settings.temperature).log_softmax(-1)
            expected = tempered.gather(-1, torch.tensor(completion.token_ids)[:, None])[:, 0]
            assert torch.allclose(torch.tensor(completion.logprobs), expected, atol=LOGPROB_TOLERANCE)
    finally:
        model.train(was_training)


def make_state_dict(layers: int = 3, width: int = 8) -> dict[str, torch.Tensor]:
    embedding = torch.randn(16, width)
    state = {"model.embed_tokens.weight": embedding}
    for layer in range(layers):
        for part in ("q_proj", "k_proj", "v_proj"):
            state[f"model.layers.{layer}.self_attn.{part}.weight"] = torch.randn(width, width)
        state[f"model.layers.{layer}.input_layernorm.weight"] = torch.ones(width)
    state["model.norm.weight"] = torch.ones(width)
    state["lm_head.weight"] = embedding  # tied
    return state


def test_weight_buckets_keep_each_layer_whole_and_send_tied_tensors_once():
    state = make_state_dict()
    layer_bytes = 3 * 8 * 8 * 2 + 8 * 2  # in bfloat16
    buckets = list(weight_buckets(state, torch.bfloat16, bucket_bytes=layer_bytes))
    names = [name for bucket in buckets for name in bucket]
    assert names == [name for name in state if name != "lm_head.weight"]
    for bucket in buckets:
        layers = {name.split(".")[2] for name in bucket if name.startswith("model.layers.")}
        assert len(layers) <= 1
        assert all(tensor.dtype == torch.bfloat16 and tensor.is_contiguous() for tensor in bucket.values())
    assert len(buckets) == 5  # embedding, three layers, final norm


def test_weight_buckets_fill_up_to_the_limit():
    state = make_state_dict()
    assert len(list(weight_buckets(state, torch.float32, bucket_bytes=1 << 30))) == 1


@requires_vllm
def test_sampled_log_probs_read_alike_from_vllms_flat_lists_and_its_dicts():
    from vllm.logprobs import FlatLogprobs, Logprob

    from training.rollout.vllm_engine import sampled_logprobs

    tokens = (5, 9, 2)
    dicts = [{5: Logprob(-0.5, rank=3)}, {9: Logprob(-1.25, rank=1)}, {2: Logprob(-3.0, rank=7)}]
    flat = FlatLogprobs()
    flat.extend(dicts)
    assert sampled_logprobs(dicts, tokens) == sampled_logprobs(flat, tokens) == (-0.5, -1.25, -3.0)
    with pytest.raises(RuntimeError, match="sampled tokens"):
        sampled_logprobs(flat, (5, 9, 3))


@pytest.mark.slow
@requires_vllm
def test_a_tied_lm_head_follows_the_weight_updates(tiny, tmp_path):
    """Most small instruct models tie the LM head to the embedding (Qwen2.5-0.5B): the update sends it once, as
    the embedding, and vLLM's packed copy of the head (on a CPU) must be rebuilt from it, or the engine samples
    from the head loaded at start while the trainer moves on."""
    from transformers import Qwen2ForCausalLM

    from training.models.loading import load_model
    from training.rollout.torch_engine import TorchRolloutEngine
    from training.rollout.vllm_engine import build

    model, tokenizer, _ = tiny
    config = copy.deepcopy(model.config)
    config.tie_word_embeddings = True
    torch.manual_seed(1)
    Qwen2ForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    tied = load_model(str(tmp_path))
    assert tied.lm_head.weight is tied.model.embed_tokens.weight
    engine = build(tied, tokenizer, str(tmp_path), EngineSettings(rollout_dtype="float32"))
    try:
        with torch.no_grad():
            for parameter in tied.parameters():
                parameter.add_(torch.randn_like(parameter) * 0.05)
        engine.update_weights(tied)
        requests = [RolloutRequest(tuple(tokenizer(f"Problem: {a} + {b} =")["input_ids"])) for a, b in
                    ((1, 2), (33, 4), (5, 67))]
        got = engine.generate(requests, SamplingSettings(max_new_tokens=20, temperature=0.0))
        want = TorchRolloutEngine(tied, tokenizer).generate(requests, SamplingSettings(max_new_tokens=20,
                                                                                        temperature=0.0))
    finally:
        engine.close()
    assert [g[0].token_ids for g in got] == [g[0].token_ids for g in want]
    for ours, reference in zip(got, want):
        assert torch.allclose(torch.tensor(ours[0].logprobs), torch.tensor(reference[0].logprobs), atol=1e-4)


@requires_vllm
def test_the_engine_schedules_synchronously_so_the_repeat_check_sees_every_token(tiny_model_dir, monkeypatch):
    """Under vLLM's async scheduling (its GPU default) a logits processor reads each newest token as a -1
    placeholder, and the repeat check never fires; the engine asks vLLM to schedule synchronously."""
    import vllm

    from training.models.loading import load_model, load_tokenizer
    from training.rollout.vllm_engine import build

    class Built(Exception):
        pass

    asked = {}

    def recording_llm(**options):
        asked.update(options)
        raise Built

    monkeypatch.setattr(vllm, "LLM", recording_llm)
    directory = str(tiny_model_dir)
    with pytest.raises(Built):
        build(load_model(directory), load_tokenizer(directory), directory, EngineSettings())
    assert asked["async_scheduling"] is False
    assert asked["logits_processors"] == ["training.rollout.vllm_repeat_stop:RepeatStopLogitsProcessor"]
