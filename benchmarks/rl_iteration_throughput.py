"""Generated tokens per second per GPU of whole RL iterations, for the torch and the Megatron trainer.

The model: the tiny preset, or (--architecture qwen2-0.5b) Qwen2-0.5B's shapes with the tiny tokenizer and
random weights (358M parameters), built locally. Each trainer runs --iterations RL iterations of --problems
problems x k=--samples responses of up to --max-tokens tokens on the synthetic task with the torch rollout
engine (on a GPU it samples in bf16 and, beside Megatron, on the GPU too); printed per trainer: median
iteration seconds, rollout and training seconds, generated tokens/s per GPU, and the median sampler KL (the
engine's 16-bit sampling against the trainer's log-probs, training/sampler_gap.py). The Megatron trainer needs a
GPU (on a CPU it is skipped, saying so). scripts/gpu_smoke.sh runs it.
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


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--architecture", choices=("tiny", "qwen2-0.5b", "small-25m"), default="tiny")
    parser.add_argument("--trainers", default="torch,megatron")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--problems", type=int, default=32)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--rollout-compile", choices=("auto", "on", "off"), default="auto",
                        help="the run's rollout_compile (auto: compiled decoding on a GPU)")
    parser.add_argument("--rollout-loop", choices=("auto", "generate", "lean"), default="auto",
                        help="the run's rollout_loop (lean: the torch engine's own decoding loop; auto: lean "
                             "where decoding is compiled)")
    return parser.parse_args()


def measure(trainer: str, model: Path, models_dir: Path, args) -> dict[str, float]:
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer)
               for p in generate(max(args.problems, 64), seed=0)]
    config = parse_config(RLConfig, dict(
        model=str(model), trainer_backend=trainer, iterations=args.iterations, batch_size=args.problems,
        samples_per_problem=args.samples, max_response_tokens=args.max_tokens, learning_rate=1e-6,
        micro_batch_size=16, checkpoint_every_iterations=10_000, stored_samples_per_iteration=0,
        rollout_compile=args.rollout_compile, rollout_loop=args.rollout_loop))
    reports = []
    with tempfile.TemporaryDirectory() as output:
        run(config, records, RunPaths(Path(output), models_dir), TrainingHooks(on_iteration=reports.append))
    steady = reports[1:] or reports  # the first iteration pays for warm-up (kernels, allocator)
    seconds = statistics.median(report.seconds for report in steady)
    train = statistics.median(report.extra.get("train_seconds", 0.0) for report in steady)
    tokens = statistics.median(report.tokens_generated for report in steady)
    gaps = [report.extra["sampler_kl"] for report in steady if "sampler_kl" in report.extra]
    return {"iteration_s": seconds, "train_s": train, "rollout_s": seconds - train,
            "tokens_per_iteration": tokens, "tokens_per_s_per_gpu": tokens / seconds,
            "rollout_tokens_per_s": tokens / max(seconds - train, 1e-9),
            "sampler_kl": statistics.median(gaps) if gaps else float("nan")}


def main() -> None:
    args = parse_arguments()
    import torch

    from benchmarks.workloads import architecture_model

    with tempfile.TemporaryDirectory() as scratch:
        models_dir = Path(scratch)
        model = architecture_model(args.architecture, models_dir)
        device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
        print(f"{args.architecture} on {device}: {args.problems} problems x k={args.samples}, up to "
              f"{args.max_tokens} tokens, median of iterations 2..{args.iterations}, rollout_compile "
              f"{args.rollout_compile}, rollout_loop {args.rollout_loop}")
        print(f"{'trainer':<10}{'iteration s':>12}{'rollout s':>11}{'train s':>9}{'tokens':>9}{'tokens/s/GPU':>14}"
              f"{'rollout tok/s':>15}{'sampler KL':>12}")
        for trainer in args.trainers.split(","):
            if trainer == "megatron" and not torch.cuda.is_available():
                print(f"{trainer:<10}skipped: the Megatron trainer runs on GPUs only (the CPU tests use a shim)")
                continue
            result = measure(trainer, model, models_dir, args)
            print(f"{trainer:<10}{result['iteration_s']:>12.2f}{result['rollout_s']:>11.2f}{result['train_s']:>9.2f}"
                  f"{result['tokens_per_iteration']:>9.0f}{result['tokens_per_s_per_gpu']:>14.0f}"
                  f"{result['rollout_tokens_per_s']:>15.0f}{result['sampler_kl']:>12.2e}")


if __name__ == "__main__":
    main()
