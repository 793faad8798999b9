"""The demo recipe on several seeds: held-out accuracy at warm-up and at the end, mean tokens, wall time.

Each seed runs the README demo's training (training.recipes.TINY_DEMO: warm-up SFT, then RL) with that run
seed, then scores checkpoint 0 (the warm-up) and the last checkpoint on the same held-out problems (the
synthetic-arithmetic benchmark's split, never trained on) with the same samples' seed. The gain carries its
paired two-level bootstrap interval (common.paired_bootstrap). Prints one row per seed, then the mean and the
spread (sample standard deviation) over seeds.

    python benchmarks/demo_recipe.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HELD_OUT_SEED = 90_001  # the synthetic-arithmetic benchmark's seed


def held_out_records(count: int):
    from training.tasks.arithmetic import HELD_OUT, generate
    from training.types import PromptRecord

    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=HELD_OUT_SEED, split=HELD_OUT)]


def train_records(count: int):
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord

    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=0)]


def score(checkpoint: Path, records, samples: int, max_tokens: int):
    from training.heldout import held_out_accuracy
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.base import SamplingSettings
    from training.rollout.torch_engine import TorchRolloutEngine

    tokenizer = load_tokenizer(str(checkpoint))
    engine = TorchRolloutEngine(load_model(str(checkpoint)), tokenizer)
    return held_out_accuracy(engine, tokenizer, records, samples_per_problem=samples,
                             settings=SamplingSettings(max_new_tokens=max_tokens, temperature=1.0, seed=1234))


def one_seed(seed: int, args, folder: Path) -> dict:
    """Train the recipe with this run seed; score its warm-up and last checkpoints."""
    import torch

    from common.knobs import parse_config
    from common.paired_bootstrap import paired_change
    from training.checkpoint import checkpoint_dir
    from training.config import RLConfig
    from training.loop import run
    from training.recipes import TINY_DEMO
    from training.types import RunPaths, TrainingHooks

    torch.set_num_threads(args.threads)
    knobs = {**TINY_DEMO, "seed": seed, "checkpoint_every_iterations": TINY_DEMO["iterations"]}
    if args.iterations:
        knobs |= {"iterations": args.iterations, "checkpoint_every_iterations": args.iterations}
    if args.warmup_steps:
        knobs |= {"warmup_sft_steps": args.warmup_steps}
    config = parse_config(RLConfig, knobs)
    reports = []
    started = time.perf_counter()
    run(config, train_records(256), RunPaths(folder / f"seed-{seed}", folder / "models"),
        TrainingHooks(on_iteration=reports.append))
    seconds = time.perf_counter() - started
    held_out = held_out_records(args.problems)
    warm = score(checkpoint_dir(folder / f"seed-{seed}", 0), held_out, args.samples, args.max_tokens)
    last = score(checkpoint_dir(folder / f"seed-{seed}", config.iterations), held_out, args.samples, args.max_tokens)
    gain = paired_change(warm.correct_by_problem, last.correct_by_problem).scaled(100)
    tokens = paired_change(warm.tokens_by_problem, last.tokens_by_problem)
    first, final = reports[:5], reports[-5:]
    return {"seed": seed, "warm": warm.accuracy * 100, "last": last.accuracy * 100, "gain": gain,
            "warm_tokens": warm.mean_response_tokens, "last_tokens": last.mean_response_tokens, "tokens": tokens,
            "train_first": statistics.mean(r.train_accuracy for r in first) * 100,
            "train_last": statistics.mean(r.train_accuracy for r in final) * 100,
            "length_first": statistics.mean(r.mean_response_length for r in first),
            "length_last": statistics.mean(r.mean_response_length for r in final), "seconds": seconds}


def spread(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}" if len(values) > 1 else f"{values[0]:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--problems", type=int, default=256, help="held-out problems (default 256)")
    parser.add_argument("--samples", type=int, default=4, help="samples per held-out problem (default 4)")
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--iterations", type=int, default=0, help="RL iterations (default: the recipe's)")
    parser.add_argument("--warmup-steps", type=int, default=0, help="warm-up SFT steps (default: the recipe's)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="demo-recipe-") as folder:
        for seed in args.seeds:
            row = one_seed(seed, args, Path(folder))
            rows.append(row)
            gain, tokens = row["gain"], row["tokens"]
            print(f"seed {seed}: held-out {row['warm']:.1f}% -> {row['last']:.1f}% (gain {gain.change:+.1f} "
                  f"[{gain.low:+.1f}, {gain.high:+.1f}] points), mean tokens {row['warm_tokens']:.1f} -> "
                  f"{row['last_tokens']:.1f} ({tokens.change:+.1f} [{tokens.low:+.1f}, {tokens.high:+.1f}]); training "
                  f"accuracy (first/last 5 iterations) {row['train_first']:.1f}% -> {row['train_last']:.1f}%, "
                  f"length {row['length_first']:.1f} -> {row['length_last']:.1f}; {row['seconds']:.0f} s", flush=True)
    print(f"over {len(rows)} seeds (mean ± sd): held-out at warm-up {spread([r['warm'] for r in rows])}%, at the end "
          f"{spread([r['last'] for r in rows])}%, gain {spread([r['gain'].change for r in rows])} points; mean tokens "
          f"{spread([r['warm_tokens'] for r in rows])} -> {spread([r['last_tokens'] for r in rows])}; wall time "
          f"{spread([r['seconds'] for r in rows])} s per seed")


if __name__ == "__main__":
    main()
