"""Rollout tokens/s of the vLLM engine versus the torch engine, and vLLM's weight-update seconds, side by side.

On the tiny preset (created in a temporary directory unless --model-dir is given), or a larger architecture with
random weights (--architecture small-25m or qwen2-0.5b, benchmarks/workloads.py), with one seeded random stream
per sample as the RL loop asks for them (--unseeded: one call seed, as evaluations do). The tiny model measures
each engine's per-step overhead, which is most of its decoding step on a CPU; small-25m, where the model's
arithmetic dominates, measures how each engine batches it (both drop finished rows from their batch: vLLM at
every step, the torch engine every SEGMENT_STEPS steps; also printed: the torch engine decoding each call in one
generate call, every row computed until the longest ends). Set
OMP_NUM_THREADS=1 on small shared CPUs before running; the vLLM engine sets its own defaults
(in-process engine core, 1 GiB CPU KV cache).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--samples", type=int, default=8, help="n: completions per prompt")
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="timed generate calls per engine (median)")
    parser.add_argument("--update-repeats", type=int, default=5, help="timed weight updates (median)")
    parser.add_argument("--architecture", choices=("tiny", "small-25m", "qwen2-0.5b"), default="tiny")
    parser.add_argument("--model-dir", help="a saved Hugging Face model directory instead of --architecture")
    parser.add_argument("--unseeded", action="store_true", help="no per-sample seeds")
    return parser.parse_args()


def rollout_tokens_per_second(engine, requests, settings, repeats: int) -> tuple[float, int]:
    """Median generated tokens per second over `repeats` calls after one warm-up call, and tokens per call."""
    engine.generate(requests, settings)
    rates, tokens = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        groups = engine.generate(requests, settings)
        elapsed = time.perf_counter() - started
        tokens = sum(len(completion.token_ids) for group in groups for completion in group)
        rates.append(tokens / elapsed)
    return statistics.median(rates), tokens


def update_seconds(engine, model, repeats: int) -> float:
    """Median seconds of an in-memory weight update (serialise, send, reload, reset the prefix cache)."""
    durations = []
    for _ in range(repeats):
        engine.update_weights(model)
        durations.append(engine.last_update_seconds)
    return statistics.median(durations)


def main() -> None:
    arguments = parse_arguments()
    from benchmarks.workloads import architecture_model, arithmetic_requests
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.base import EngineSettings, SamplingSettings
    from training.rollout.torch_engine import TorchRolloutEngine
    from training.rollout.vllm_engine import build

    with tempfile.TemporaryDirectory(prefix="rollout-bench-") as scratch:
        model_dir = arguments.model_dir or str(architecture_model(arguments.architecture, Path(scratch)))
        model, tokenizer = load_model(model_dir), load_tokenizer(model_dir)
        requests = arithmetic_requests(tokenizer, arguments.prompts, arguments.samples, not arguments.unseeded)
        settings = SamplingSettings(max_new_tokens=arguments.new_tokens, temperature=1.0)

        torch_rate, torch_tokens = rollout_tokens_per_second(
            TorchRolloutEngine(model, tokenizer), requests, settings, arguments.repeats)
        one_call = TorchRolloutEngine(model, tokenizer)
        one_call.segment_steps = None  # every row computed until the longest ends, as before segmented decoding
        one_call_rate, _ = rollout_tokens_per_second(one_call, requests, settings, arguments.repeats)
        started = time.perf_counter()
        vllm_engine = build(model, tokenizer, model_dir, EngineSettings())
        start_seconds = time.perf_counter() - started
        try:
            vllm_rate, vllm_tokens = rollout_tokens_per_second(vllm_engine, requests, settings, arguments.repeats)
            update = update_seconds(vllm_engine, model, arguments.update_repeats)
        finally:
            vllm_engine.close()

    parameters = sum(parameter.numel() for parameter in model.parameters())
    print(f"\n{arguments.model_dir or arguments.architecture}: {arguments.prompts} prompts x n={arguments.samples} x "
          f"{arguments.new_tokens} new tokens, {parameters / 1e6:.1f}M parameters, median of {arguments.repeats} "
          f"(updates: {arguments.update_repeats})")
    print(f"{'engine':<8} {'tokens/call':>12} {'tokens/s':>10} {'update s':>10} {'start s':>9}")
    print(f"{'torch':<8} {torch_tokens:>12} {torch_rate:>10.0f} {'-':>10} {'-':>9}")
    print(f"{'torch, one call (rows stay until the longest ends)':<8} {one_call_rate:>10.0f} tokens/s: segments "
          f"{torch_rate / one_call_rate:.2f}x")
    print(f"{'vllm':<8} {vllm_tokens:>12} {vllm_rate:>10.0f} {update:>10.4f} {start_seconds:>9.1f}")
    print(f"vllm/torch tokens/s ratio: {vllm_rate / torch_rate:.2f}")


if __name__ == "__main__":
    main()
