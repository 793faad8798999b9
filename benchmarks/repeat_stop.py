"""Tokens generated and seconds with and without repeat stopping while decoding, on a repeating model.

The repeating model: the untrained tiny preset decoded greedily, which falls into loops within a few dozen
tokens. Without repeat stopping every response runs to --max-tokens (the loop's detection would cut it only
afterwards); with it each response ends at the first degenerate repeat (a block of up to 32 tokens repeated
4 times over at least 16). Both engines, side by side in one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(engine, requests, settings) -> tuple[int, float]:
    engine.generate(requests[:1], settings)  # warm-up
    started = time.perf_counter()
    outputs = engine.generate(requests, settings)
    return sum(len(c.token_ids) for group in outputs for c in group), time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--engines", default="torch,vllm")
    args = parser.parse_args()
    from training.rollout.base import EngineSettings

    from training.models.loading import load_model, load_tokenizer
    from training.models.tiny import create_tiny_preset
    from training.prompting import prompt_ids
    from training.rollout.base import RolloutRequest, SamplingSettings
    from training.rollout.repeats import RepeatLimits
    from training.tasks.arithmetic import generate

    with tempfile.TemporaryDirectory() as scratch:
        directory = str(create_tiny_preset(Path(scratch) / "tiny"))
        model, tokenizer = load_model(directory), load_tokenizer(directory)
        requests = [RolloutRequest(prompt_ids(p.problem, tokenizer)) for p in generate(args.prompts, seed=0)]
        free = SamplingSettings(args.max_tokens, temperature=0.0)
        stopping = SamplingSettings(args.max_tokens, temperature=0.0, stop_repeats=RepeatLimits())
        print(f"{args.prompts} prompts, greedy, up to {args.max_tokens} tokens, untrained tiny model")
        print(f"{'engine':<8}{'tokens without':>16}{'tokens with':>13}{'ratio':>8}{'s without':>11}{'s with':>9}"
              f"{'ratio':>8}")
        for name in args.engines.split(","):
            if name == "torch":
                from training.rollout.torch_engine import TorchRolloutEngine

                engine = TorchRolloutEngine(model, tokenizer)
            else:
                from training.rollout.vllm_engine import build

                engine = build(model, tokenizer, directory, EngineSettings(rollout_dtype="float32"))
            try:
                tokens_free, seconds_free = measure(engine, requests, free)
                tokens_stop, seconds_stop = measure(engine, requests, stopping)
            finally:
                engine.close()
            print(f"{name:<8}{tokens_free:>16}{tokens_stop:>13}{tokens_stop / tokens_free:>8.2f}"
                  f"{seconds_free:>11.2f}{seconds_stop:>9.2f}{seconds_stop / seconds_free:>8.2f}")


if __name__ == "__main__":
    main()
