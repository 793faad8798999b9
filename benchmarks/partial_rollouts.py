"""Partial rollouts versus whole rollouts on a heavy-tailed response-length workload, torch and vLLM engines.

Both modes run the same RL loop on the same problems and train on full batches (batch_size groups of k
finished responses every iteration). Whole: each iteration waits for its longest response. Partial
(report §2.6.2): a response grows at most --budget tokens per iteration, longer ones wait in the replay
buffer while fresh problems fill the batch. Printed side by side: median iteration seconds, trained
responses per second, and wall time to --target trained responses, with partial/whole ratios.

Workloads (benchmarks/workloads.py): two_mode (default; 90% of responses short, mean 20 tokens, 10% long,
running to --max-tokens) and geometric (every token equally likely: lengths geometric with mean ~391,
mostly near the cap, so there is little tail to cut). --learning adds a short RL run of the warmed-up tiny
model on the arithmetic task in both modes, to show that they learn alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROMPT_END_TOKEN = 29  # the last token of every arithmetic prompt of the tiny tokenizer


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("two_mode", "geometric"), default="two_mode")
    parser.add_argument("--engines", default="torch,vllm", help="comma-separated: torch, vllm")
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--batch", type=int, default=8, help="problems per iteration")
    parser.add_argument("--samples", type=int, default=4, help="k responses per problem")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--budget", type=int, default=64, help="partial-rollout tokens per response and iteration")
    parser.add_argument("--max-parked", type=int, default=64, help="max_parked_groups of the partial runs")
    parser.add_argument("--target", type=int, default=256, help="trained responses for the wall-time column")
    parser.add_argument("--learning", action="store_true", help="also compare learning curves (several minutes)")
    return parser.parse_args()


def records(count: int, seed: int):
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord

    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=seed)]


def run_loop(settings: dict, models_dir: Path, prompt_records) -> list:
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.types import RunPaths, TrainingHooks

    config = parse_config(RLConfig, {"checkpoint_every_iterations": 10_000, **settings})
    reports = []
    with tempfile.TemporaryDirectory() as output:
        run(config, prompt_records, RunPaths(Path(output), models_dir), TrainingHooks(on_iteration=reports.append))
    return reports


def throughput(reports, samples: int, target: int) -> dict[str, float]:
    seconds = [report.seconds for report in reports]
    trained = [report.extra["groups_trained"] * samples for report in reports]
    elapsed, done, to_target = 0.0, 0.0, float("nan")
    for spent, count in zip(seconds, trained):
        elapsed, done = elapsed + spent, done + count
        if done >= target:
            to_target = elapsed
            break
    return {"iteration_s": statistics.median(seconds), "responses_trained_per_s": sum(trained) / sum(seconds),
            "seconds_to_target": to_target, "tokens_generated_per_s": sum(r.tokens_generated for r in reports)
            / sum(seconds), "groups_parked_last": reports[-1].extra["groups_parked"],
            "policy_version_span_max": max(r.extra["policy_version_span"] for r in reports)}


def speed(args, model: Path, models_dir: Path) -> None:
    prompt_records = records(256, seed=1)
    base = dict(model=str(model), iterations=args.iterations, batch_size=args.batch,
                samples_per_problem=args.samples, max_response_tokens=args.max_tokens, learning_rate=1e-6)
    if args.target > args.iterations * args.batch * args.samples:
        raise SystemExit("--target exceeds the responses the run trains; raise --iterations")
    print(f"{args.workload} workload, {args.iterations} iterations of {args.batch} problems x k={args.samples}, "
          f"max {args.max_tokens} tokens, budget {args.budget}, max_parked_groups {args.max_parked}")
    print(f"{'engine':<7}{'metric':<26}{'whole':>12}{'partial':>12}{'partial/whole':>15}")
    for engine in args.engines.split(","):
        whole = throughput(run_loop({**base, "rollout_engine": engine}, models_dir, prompt_records),
                           args.samples, args.target)
        partial = throughput(run_loop({**base, "rollout_engine": engine, "partial_rollout_token_budget": args.budget,
                                       "max_parked_groups": args.max_parked}, models_dir, prompt_records),
                             args.samples, args.target)
        for name in whole:
            ratio = partial[name] / whole[name] if whole[name] else float("nan")
            print(f"{engine:<7}{name:<26}{whole[name]:>12.3f}{partial[name]:>12.3f}{ratio:>15.2f}")


def learning(args, models_dir: Path) -> None:
    """The demo recipe's warm-up, then RL in both modes from the same warm model: training accuracy by iteration."""
    from training.recipes import TINY_DEMO

    prompt_records = records(256, seed=0)
    recipe = {**TINY_DEMO, "iterations": 16}
    warm = run_loop({**recipe, "iterations": 1, "checkpoint_every_iterations": 1}, models_dir, prompt_records)
    del warm  # the warm-up is saved as the run's checkpoint 0; the runs below redo it with the same seed
    curves = {}
    for mode, budget in (("whole", None), ("partial", 16)):
        reports = run_loop({**recipe, "partial_rollout_token_budget": budget}, models_dir, prompt_records)
        curves[mode] = [report.train_accuracy for report in reports]
    print("\ntraining accuracy (demo recipe, 16 iterations; partial: budget 16 of 64 tokens)")
    print(f"{'mode':<9}{'iterations 1-4':>16}{'iterations 13-16':>18}  by iteration")
    for mode, curve in curves.items():
        print(f"{mode:<9}{statistics.mean(curve[:4]):>16.3f}{statistics.mean(curve[-4:]):>18.3f}  "
              + " ".join(f"{value:.2f}" for value in curve))


def main() -> None:
    args = parse_arguments()
    from benchmarks.workloads import geometric_model, two_mode_model

    with tempfile.TemporaryDirectory() as scratch:
        models_dir = Path(scratch)
        model = two_mode_model(models_dir, PROMPT_END_TOKEN) if args.workload == "two_mode" \
            else geometric_model(models_dir)
        speed(args, model, models_dir)
        if args.learning:
            learning(args, models_dir)


if __name__ == "__main__":
    main()
