"""Seconds of the torch trainer's update on heavy-tailed batches: padded rows, packed rows in bins as wide as
the longest response, and packed by width groups (the default, training/trainer/packing.py).

Each batch is --groups problems x k=--samples responses after a --prompt-tokens prompt; a response runs to
--max-tokens with probability --long-share, else its length is exponential with mean --short-mean (the
two-mode shape of benchmarks/workloads.py). Each of --batches batches is updated --repeats times by every
variant in turn (one gradient step and the KL pass after it, as an RL iteration does). Printed per variant:
the median update seconds and trained tokens per second, and the median of each update's ratio to the padded
and to the one-group variant. On a GPU the trainer runs there in bf16 autocast; --architecture qwen2-0.5b
gives Qwen2-0.5B's shapes with random weights (benchmarks/workloads.py).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VARIANTS = ("padded", "one-group", "width-groups")


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--architecture", choices=("tiny", "small-25m", "qwen2-0.5b"), default="tiny")
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--prompt-tokens", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--long-share", type=float, default=0.1)
    parser.add_argument("--short-mean", type=float, default=20.0)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="torch intra-op threads")
    return parser.parse_args()


def heavy_tailed_batch(args, vocabulary: int, seed: int):
    """A policy batch of random tokens with two-mode response lengths, and rewards."""
    import torch

    from training.batch import build_policy_batch
    from training.collect import new_groups

    rng = random.Random(seed)
    prompts = [tuple(rng.randrange(3, vocabulary) for _ in range(args.prompt_tokens)) for _ in range(args.groups)]
    groups = new_groups(list(range(args.groups)), prompts, 1, args.samples)
    for trajectory in (t for group in groups for t in group.trajectories):
        long = rng.random() < args.long_share
        length = args.max_tokens if long else min(args.max_tokens, 1 + int(rng.expovariate(1 / args.short_mean)))
        trajectory.extend([rng.randrange(3, vocabulary) for _ in range(length)], 1)
        trajectory.finish_reason = "length" if long else "stop"
    rewards = torch.tensor([[rng.random() for _ in range(args.samples)] for _ in range(args.groups)])
    return build_policy_batch(groups, 0, 1, None), rewards


def trainer_for(variant: str, model):
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.trainer.torch_trainer import TorchTrainer

    config = parse_config(RLConfig, {"learning_rate": 1e-7, "pack_sequences": variant != "padded"})
    return TorchTrainer(model, config)


def timed_update(trainer, batch, rewards, group_width: int) -> float:
    """Seconds of one update, with rows packed in width groups above `group_width` (packing.MIN_GROUP_WIDTH)."""
    import torch

    from training.trainer import packing

    packing.MIN_GROUP_WIDTH = group_width
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    trainer.update(batch, rewards)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    args = parse_arguments()
    import torch

    from benchmarks.workloads import architecture_model
    from training.models.loading import load_model
    from training.trainer import packing

    default_width = packing.MIN_GROUP_WIDTH
    # one-group: every row of a micro-batch in bins as wide as its longest (packing before width groups)
    widths = {"padded": default_width, "one-group": 1 << 30, "width-groups": default_width}
    torch.set_num_threads(args.threads)
    seconds = {variant: [] for variant in VARIANTS}
    ratios = {(variant, base): [] for variant in VARIANTS for base in ("padded", "one-group")}
    tokens = []
    with tempfile.TemporaryDirectory() as scratch:
        model = load_model(str(architecture_model(args.architecture, Path(scratch))))
        trainers = {variant: trainer_for(variant, model) for variant in VARIANTS}  # one model, shared
        vocabulary = model.get_output_embeddings().weight.shape[0]
        for seed in range(args.batches):
            batch, rewards = heavy_tailed_batch(args, vocabulary, seed)
            tokens.append(int(batch.loss_mask.sum()))
            timed_update(trainers["width-groups"], batch, rewards, default_width)  # warm-up, not counted
            for _ in range(args.repeats):
                times = {variant: timed_update(trainers[variant], batch, rewards, widths[variant])
                         for variant in VARIANTS}
                for variant, value in times.items():
                    seconds[variant].append(value)
                    for base in ("padded", "one-group"):
                        ratios[(variant, base)].append(times[base] / value)
    packing.MIN_GROUP_WIDTH = default_width
    print(f"{args.architecture}, {args.groups} x k={args.samples}, prompts {args.prompt_tokens} tokens, responses: "
          f"{args.long_share:.0%} run to {args.max_tokens}, else mean {args.short_mean:.0f}; {args.batches} batches "
          f"(median {statistics.median(tokens)} trained tokens) x {args.repeats} updates; device "
          f"{trainers['padded'].device}, {args.threads} threads")
    print(f"{'variant':<14}{'update_s':>10}{'tokens/s':>11}{'padded/this':>13}{'one-group/this':>16}")
    for variant in VARIANTS:
        median = statistics.median(seconds[variant])
        print(f"{variant:<14}{median:>10.4f}{statistics.median(tokens) / median:>11.0f}"
              f"{statistics.median(ratios[(variant, 'padded')]):>13.2f}"
              f"{statistics.median(ratios[(variant, 'one-group')]):>16.2f}", flush=True)


if __name__ == "__main__":
    main()
