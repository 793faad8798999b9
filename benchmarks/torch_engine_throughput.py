"""Tokens/s of the torch rollout engine as an RL run builds it (on a GPU: bf16, rows per call from free memory).

Qwen2-0.5B's shapes by default (random weights, the tiny tokenizer), --prompts x n=--samples rows of up to
--new-tokens tokens at T = 1 with per-sample seeds. Printed, median of --repeats calls after a warm-up: the
engine decoding into a static cache whose step transformers compiles (CUDA graphs; the warm-up call pays the
compilation), the default engine (finished rows leave between segments of 16 steps) and the same engine
decoding each call in one piece. The issue's anchor: 1,244 to 2,205 tokens/s on the smoke run before this
engine (plain generate). lean and lean-compiled: the engine's own decoding loop (training.rollout.lean_decoding),
whose compiled step holds the forward pass and the sampler in one graph; lean-compiled-stock: the same with
transformers' stock SDPA attention, which copies each key/value head per query group at every decoding step
(what the engine did before training.models.attention took decoding steps on every device).
scripts/gpu_smoke.sh runs it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--architecture", choices=("tiny", "small-25m", "qwen2-0.5b"), default="qwen2-0.5b")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--new-tokens", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variants", default="compiled,segments,one-call",
                        help="comma-separated: compiled (static cache, compiled step), segments, one-call, "
                             "lean (the engine's own loop), lean-compiled (its step compiled whole), "
                             "lean-compiled-stock (the same with transformers' stock SDPA), new-shapes "
                             "(compiled calls of other row counts, one each: what a new shape costs), cycles "
                             "(compiled lean calls each after a release for training, buffers kept as the "
                             "engine decides, then dropped every time: step time and CUDA-graph skips over "
                             "--cycles iterations)")
    parser.add_argument("--cycles", type=int, default=24, help="calls of the cycles variant, each way")
    return parser.parse_args()


def main() -> None:
    arguments = parse_arguments()
    import torch

    from benchmarks.rollout_throughput import rollout_tokens_per_second
    from benchmarks.workloads import architecture_model, arithmetic_requests
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.base import EngineSettings, SamplingSettings
    from training.rollout.segmented_decoding import SEGMENT_STEPS
    from training.rollout.torch_engine import build

    with tempfile.TemporaryDirectory(prefix="torch-engine-bench-") as scratch:
        model_dir = str(architecture_model(arguments.architecture, Path(scratch)))
        model, tokenizer = load_model(model_dir), load_tokenizer(model_dir)
    engine = build(model, tokenizer, model_dir, EngineSettings(rollout_compile="off"))
    requests = arithmetic_requests(tokenizer, arguments.prompts, arguments.samples)
    settings = SamplingSettings(max_new_tokens=arguments.new_tokens, temperature=1.0)
    device = torch.cuda.get_device_name() if engine.device.type == "cuda" else "CPU"
    print(f"{arguments.architecture} on {device}, {engine.dtype}: {arguments.prompts} prompts x n={arguments.samples}"
          f" x {arguments.new_tokens} new tokens, median of {arguments.repeats}", flush=True)
    for variant in arguments.variants.split(","):
        if variant == "new-shapes":
            new_shapes(engine, requests, settings)
            continue
        if variant == "cycles":
            for drop in (False, True):
                release_cycles(engine, requests, settings, arguments.cycles, drop)
            continue
        engine.segment_steps = None if variant == "one-call" else SEGMENT_STEPS
        engine.compile_decoding = variant in ("compiled", "lean-compiled", "lean-compiled-stock")
        engine.lean_decoding = variant.startswith("lean")
        attention = engine.model.config._attn_implementation
        if variant == "lean-compiled-stock":
            engine.model.set_attn_implementation("sdpa")
        started = time.perf_counter()
        rate, tokens = rollout_tokens_per_second(engine, requests, settings, arguments.repeats)
        engine.model.set_attn_implementation(attention)
        print(f"{variant:<10} {tokens:>8} tokens/call {rate:>10.0f} tokens/s "
              f"({time.perf_counter() - started:.0f} s with the warm-up call)", flush=True)


def new_shapes(engine, requests, settings) -> None:
    """One compiled call each of 3/4, 1/2 + 1 and all of the prompts, in that order, on the lean loop (the GPU
    default): an RL run's calls change their row count; the second shape compiles the step with symbolic
    shapes, later ones reuse it, and on a GPU each new count records a CUDA graph. Rows are padded to the grid of
    compiled row counts, so counts that pad alike share a shape."""
    from training.rollout.placement import compiled_row_count

    engine.compile_decoding, engine.lean_decoding = True, True
    for count in (len(requests) * 3 // 4, len(requests) // 2 + 1, len(requests)):
        started = time.perf_counter()
        groups = engine.generate(requests[:count], settings)
        seconds = time.perf_counter() - started
        tokens = sum(len(completion.token_ids) for group in groups for completion in group)
        rows = count * requests[0].n
        print(f"new-shape  {rows:>5} rows (padded to {compiled_row_count(rows)}) {tokens:>8} tokens {seconds:>7.1f} s "
              f"{tokens / seconds:>10.0f} tokens/s", flush=True)


def release_cycles(engine, requests, settings, cycles: int, drop: bool) -> None:
    """Compiled lean calls as an RL run makes them: each after release_for_training and a trainer's allocations.
    Kept buffers replay one recorded graph; dropped ones get new addresses, so torch records again each time
    and keeps the old recordings (and older torch versions stop using graphs after 128 of them)."""
    import torch

    from training.rollout.lean_decoding import cudagraph_skips

    engine.compile_decoding, engine.lean_decoding = True, True
    engine.generate(requests, settings)  # compiles and records
    skips, rates, kept = cudagraph_skips(), [], 0
    for _ in range(cycles):
        engine.release_for_training()
        if drop:
            engine._kept.drop()
        kept += engine._kept.cache is not None
        trainer_blocks = [torch.empty(size << 20, dtype=torch.uint8, device=engine.device) for size in (64, 3, 512)]
        del trainer_blocks
        started = time.perf_counter()
        groups = engine.generate(requests, settings)
        tokens = sum(len(completion.token_ids) for group in groups for completion in group)
        rates.append(tokens / (time.perf_counter() - started))
    third = max(1, cycles // 3)
    print(f"cycles     {'dropped' if drop else 'engine '} kept {kept}/{cycles}: tokens/s median of the first "
          f"{third} {statistics.median(rates[:third]):>8.0f}, of the last {third} "
          f"{statistics.median(rates[-third:]):>8.0f}; CUDA-graph skips {cudagraph_skips() - skips}", flush=True)


if __name__ == "__main__":
    main()
