"""RL iteration time with and without partial rollouts on a heavy-tailed response-length workload.

The workload: the tiny preset with its output head zeroed, so every token (end-of-sequence included)
is equally likely and response lengths are geometric, capped at --max-tokens: most responses are
short, a few run to the cap. Without partial rollouts each iteration waits for its longest response;
with them each response grows at most --budget tokens per iteration and the rest waits in the
replay buffer. Both modes run the same loop on the same problems, side by side.
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


def heavy_tailed_model(models_dir: Path) -> Path:
    """The tiny preset with a zeroed head: uniform next-token distribution."""
    import torch

    from training.models.loading import load_model, load_tokenizer
    from training.models.tiny import create_tiny_preset

    source = create_tiny_preset(models_dir / "tiny")
    model, tokenizer = load_model(str(source)), load_tokenizer(str(source))
    with torch.no_grad():
        model.lm_head.weight.zero_()
    target = models_dir / "uniform"
    model.save_pretrained(target, safe_serialization=True)
    tokenizer.save_pretrained(target)
    return target


def measure(model: Path, models_dir: Path, budget: int | None, args) -> dict[str, float]:
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord, RunPaths, TrainingHooks

    records = [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer) for p in generate(64, seed=1)]
    config = parse_config(RLConfig, dict(
        model=str(model), iterations=args.iterations, batch_size=args.batch, samples_per_problem=args.samples,
        max_response_tokens=args.max_tokens, partial_rollout_token_budget=budget, learning_rate=1e-6,
        checkpoint_every_iterations=10_000, length_penalty_weight=0.5,
    ))
    reports = []
    with tempfile.TemporaryDirectory() as output:
        run(config, records, RunPaths(Path(output), models_dir), TrainingHooks(on_iteration=reports.append))
    seconds = [report.seconds for report in reports]
    trained = sum(report.extra.get("groups_trained", 0) for report in reports) * args.samples
    return {"iteration_s": statistics.mean(seconds), "p95_iteration_s": sorted(seconds)[int(0.95 * (len(seconds) - 1))],
            "responses_trained_per_s": trained / sum(seconds),
            "tokens_generated_per_s": sum(r.tokens_generated for r in reports) / sum(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--batch", type=int, default=8, help="problems per iteration")
    parser.add_argument("--samples", type=int, default=4, help="k responses per problem")
    parser.add_argument("--max-tokens", type=int, default=384)
    parser.add_argument("--budget", type=int, default=64, help="partial-rollout tokens per iteration")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as models:
        model = heavy_tailed_model(Path(models))
        full = measure(model, Path(models), None, args)
        partial = measure(model, Path(models), args.budget, args)
    print(f"{'metric':<26}{'whole':>12}{'partial':>12}{'partial/whole':>15}")
    for name in full:
        print(f"{name:<26}{full[name]:>12.3f}{partial[name]:>12.3f}{partial[name] / full[name]:>15.2f}")


if __name__ == "__main__":
    main()
