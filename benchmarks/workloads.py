"""Models for the benchmarks: response-length workloads on the tiny preset's architecture with hand-set weights,
and larger architectures with random weights.

Architectures (architecture_model): the tiny preset (1.7M parameters), small-25m (hidden 512, 8 layers: 24.5M,
where the model's arithmetic, not the engine's per-step bookkeeping, takes most of a decoding step on a CPU)
and qwen2-0.5b (Qwen2-0.5B's shapes: 358M with the tiny tokenizer), all with the tiny tokenizer.

Compute per token is the real tiny model's (every matrix is still multiplied); only the distribution of
response lengths is chosen:
- geometric: the output head zeroed, every token (end-of-sequence included) equally likely at every step;
- two_mode: the attention and MLP outputs zeroed, so the next token depends only on the current one, and
  the head set so that a response's first token picks its mode for good: short (probability `long_share`
  of a long one) with end-of-sequence at 1/short_mean per step, or long with 1/long_mean per step. Most
  responses are short and a few run very long: the heavy tail partial rollouts are meant for.
"""

from __future__ import annotations

import math
from pathlib import Path

BLOCKED = -30.0  # a logit that is never sampled in practice
ARCHITECTURES = {
    "small-25m": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                      num_key_value_heads=2, max_position_embeddings=2048),
    "qwen2-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                       num_key_value_heads=2, max_position_embeddings=4096),
}


def architecture_model(architecture: str, models_dir: Path) -> Path:
    """The tiny preset ("tiny"), or an ARCHITECTURES entry with random weights and the tiny tokenizer, saved."""
    from training.models.tiny import create_tiny_preset

    tiny = create_tiny_preset(models_dir / "tiny")
    if architecture == "tiny":
        return tiny
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from training.models.loading import load_tokenizer

    tokenizer = load_tokenizer(str(tiny))
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer), tie_word_embeddings=False,
                                         pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                                         eos_token_id=tokenizer.eos_token_id, **ARCHITECTURES[architecture]))
    return _save(model, tokenizer, models_dir / architecture)


def arithmetic_requests(tokenizer, prompts: int, samples: int, seeded: bool = True) -> list:
    """`prompts` synthetic arithmetic problems as rollout requests of `samples` each; seeded: one random stream per
    sample, as the RL loop asks (else one call seed)."""
    from training.rollout.base import RolloutRequest
    from training.rollout.seeds import stream_seed
    from training.tasks.arithmetic import generate

    return [RolloutRequest(tuple(tokenizer(f"Problem: {problem.problem}\nSolution:")["input_ids"]), n=samples,
                           sample_seeds=tuple(stream_seed(0, index, sample) for sample in range(samples))
                           if seeded else ())
            for index, problem in enumerate(generate(prompts, seed=0))]


def geometric_model(models_dir: Path) -> Path:
    """The tiny preset with a zeroed head: lengths geometric with mean ~vocabulary size."""
    import torch

    model, tokenizer = _tiny(models_dir)
    with torch.no_grad():
        model.lm_head.weight.zero_()
    return _save(model, tokenizer, models_dir / "geometric")


def two_mode_model(models_dir: Path, start_token: int, long_share: float = 0.1, short_mean: float = 20.0,
                   long_mean: float = 2000.0) -> Path:
    """The tiny architecture as a two-mode Markov chain over token types (see the module docstring).

    start_token: the last token of every prompt (the chain's start state).
    """
    import torch

    model, tokenizer = _tiny(models_dir)
    vocabulary, width = model.lm_head.weight.shape
    eos = tokenizer.eos_token_id
    special = set(tokenizer.all_special_ids) | {start_token}
    short = [token for token in range(vocabulary) if token not in special and token % 2 == 0]
    long = [token for token in range(vocabulary) if token not in special and token % 2 == 1]
    state_of = {**{token: 0 for token in short}, **{token: 1 for token in long}}  # others: state 2, the start
    with torch.no_grad():
        for layer in model.model.layers:  # the residual stream is the current token's embedding alone
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embedding = model.model.embed_tokens.weight
        embedding.zero_()
        for token in range(vocabulary):
            embedding[token, state_of.get(token, 2)] = 1.0
        model.model.norm.weight.fill_(1.0 / math.sqrt(width))  # RMS norm of a one-hot row -> the one-hot row
        head = torch.full((vocabulary, width), 0.0)
        head[:, :3] = BLOCKED
        for state, members, mean in ((0, short, short_mean), (1, long, long_mean)):
            head[members, state] = 0.0
            head[eos, state] = math.log(len(members) / (mean - 1))  # P(eos) = 1 / mean per step
        head[short, 2] = math.log((1 - long_share) / len(short))
        head[long, 2] = math.log(long_share / len(long))
        model.lm_head.weight.copy_(head)
    return _save(model, tokenizer, models_dir / "two-mode")


def _tiny(models_dir: Path):
    from training.models.loading import load_model, load_tokenizer
    from training.models.tiny import create_tiny_preset

    source = models_dir / "tiny"
    if not source.exists():
        create_tiny_preset(source)
    return load_model(str(source)), load_tokenizer(str(source))


def _save(model, tokenizer, target: Path) -> Path:
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return target
