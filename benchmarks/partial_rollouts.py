"""Partial rollouts versus whole rollouts on a heavy-tailed response-length workload, torch and vLLM engines.

Every mode runs the same RL loop on the same problems and trains on full batches (batch_size groups of k
finished responses every iteration). Whole: each iteration waits for its longest response. Partial
(report §2.6.2): a response grows at most --budget tokens per iteration, longer ones wait in the replay
buffer while fresh problems fill the batch. Overlap: partial rollouts, and the next batch is rolled out
while the trainer updates (overlap_rollouts, one step off-policy); whole-overlap: whole rollouts so.
Printed side by side, in the steady state (after --settle iterations, once the replay buffer has filled):
median iteration, training and rollout-wait seconds, trained responses per second, generated tokens per
second, rollout rounds per iteration and the share of trained tokens from older policies; and the wall time
to --target trained responses from the start; with each mode's ratio to whole, and that ratio's ceiling were
rollouts free (whole mode's iteration over the mode's training seconds: the update costs the same in every
mode, so it bounds what faster rollouts can gain). --repeats N runs every mode N times, interleaved, repeat
r with the run seed + r (its own samples, the same seed for every mode), and prints medians over the repeats
and the median of each repeat's own ratio (a shared machine's drift then meets every mode alike).
--set KNOB=VALUE gives every speed run an RL config knob
(e.g. rollout_compile=off: the torch engine decodes uncompiled on a GPU, with no compilation per row count).

Threads: the synchronous modes run torch with --sync-threads intra-op threads (default: every core, so the
baseline is not held to one core while an overlapped run uses two); overlapped modes run one thread on each
side (rollouts, training).

Workloads (benchmarks/workloads.py): two_mode (default; 90% of responses short, mean 20 tokens, 10% long,
running to --max-tokens) and geometric (every token equally likely: lengths geometric with mean ~391,
mostly near the cap, so there is little tail to cut). --learning adds a short RL run of the warmed-up tiny
model on the arithmetic task in the whole, partial and overlap modes, to show that they learn alike, with how
far off-policy each mode's trained tokens are (mean stale_sampler_kl, training/sampler_gap.py).
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
MODES = ("whole", "partial", "overlap", "whole-overlap")


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", choices=("two_mode", "geometric"), default="two_mode")
    parser.add_argument("--engines", default="torch,vllm", help="comma-separated: torch, vllm (empty: none)")
    parser.add_argument("--modes", default="whole,partial,overlap",
                        help=f"comma-separated, whole first: {', '.join(MODES)}")
    parser.add_argument("--sync-threads", type=int, default=os.cpu_count(),
                        help="torch intra-op threads of the synchronous modes")
    parser.add_argument("--overlap-threads", type=int, default=1,
                        help="torch intra-op threads of the trainer when overlapped (the rollout thread: 1)")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--settle", type=int, default=10, help="iterations left out of the steady-state figures")
    parser.add_argument("--batch", type=int, default=8, help="problems per iteration")
    parser.add_argument("--samples", type=int, default=4, help="k responses per problem")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--budget", type=int, default=64, help="partial-rollout tokens per response and iteration")
    parser.add_argument("--max-parked", type=int, default=64, help="max_parked_groups of the partial runs")
    parser.add_argument("--target", type=int, default=256, help="trained responses for the wall-time column")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of every mode, interleaved; medians and the median of each repeat's ratio")
    parser.add_argument("--learning", action="store_true", help="also compare learning curves (several minutes)")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                        help="an RL config knob for every speed run, repeatable (e.g. rollout_compile=off)")
    args = parser.parse_args()
    args.knobs = knob_settings(parser, args.set)
    return args


def knob_settings(parser: argparse.ArgumentParser, pairs: list[str]) -> dict[str, str]:
    """--set KNOB=VALUE pairs as settings (parse_config checks the names and values)."""
    knobs = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name.strip():
            parser.error(f"--set {pair!r}: expected KNOB=VALUE")
        knobs[name.strip()] = value.strip()
    return knobs


def records(count: int, seed: int, difficulties: tuple[str, ...] = ("easy", "medium", "hard", "expert")):
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord

    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=seed, difficulties=difficulties)]


def run_loop(settings: dict, models_dir: Path, prompt_records, output: Path | None = None) -> list:
    """The loop's iteration reports; checkpoints go to `output` (default: a temporary folder)."""
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.types import RunPaths, TrainingHooks

    config = parse_config(RLConfig, {"checkpoint_every_iterations": 10_000, **settings})
    reports = []
    with tempfile.TemporaryDirectory() as scratch:
        paths = RunPaths(output or Path(scratch), models_dir)
        run(config, prompt_records, paths, TrainingHooks(on_iteration=reports.append))
    return reports


def throughput(reports, samples: int, target: int, settle: int) -> dict[str, float]:
    """Steady-state figures over the iterations after the first `settle` (the replay buffer fills first, and
    until then a partial run trains mostly short responses), and the wall time to `target` trained responses
    counted from the start."""
    elapsed, done, to_target = 0.0, 0.0, float("nan")
    for report in reports:
        elapsed, done = elapsed + report.seconds, done + report.extra["groups_trained"] * samples
        if done >= target:
            to_target = elapsed
            break
    steady = reports[settle:]
    seconds = sum(report.seconds for report in steady)
    return {"iteration_s": statistics.median(report.seconds for report in steady),
            "train_s": statistics.median(report.extra["train_seconds"] for report in steady),
            "rollout_wait_s": statistics.median(report.extra.get("rollout_wait_seconds", 0.0) for report in steady),
            "responses_trained_per_s": sum(report.extra["groups_trained"] * samples for report in steady) / seconds,
            "seconds_to_target": to_target,
            "tokens_generated_per_s": sum(report.tokens_generated for report in steady) / seconds,
            "rollout_rounds": statistics.mean(report.extra["rollout_rounds"] for report in steady),
            "old_policy_token_share": statistics.mean(report.extra["old_policy_token_share"] for report in steady),
            "policy_version_span_max": max(report.extra["policy_version_span"] for report in reports)}


def mode_settings(mode: str, args) -> dict:
    """The knobs of one mode on top of the common ones."""
    partial = {"partial_rollout_token_budget": args.budget, "max_parked_groups": args.max_parked}
    return {"whole": {}, "partial": partial, "overlap": {**partial, "overlap_rollouts": True},
            "whole-overlap": {"overlap_rollouts": True}}[mode]


def speed(args, model: Path, models_dir: Path) -> None:
    import torch

    prompt_records = records(256, seed=1)
    base = dict(model=str(model), iterations=args.iterations, batch_size=args.batch,
                samples_per_problem=args.samples, max_response_tokens=args.max_tokens, learning_rate=1e-6,
                **args.knobs)
    modes = args.modes.split(",")
    if any(mode not in MODES for mode in modes) or (len(modes) > 1 and modes[0] != "whole"):
        raise SystemExit(f"--modes: whole first, then any of {', '.join(MODES[1:])}")
    if args.repeats < 1:
        raise SystemExit("--repeats: at least 1")
    if args.target > args.iterations * args.batch * args.samples:
        raise SystemExit("--target exceeds the responses the run trains; raise --iterations")
    print(f"{args.workload} workload, {args.iterations} iterations of {args.batch} problems x k={args.samples}, "
          f"max {args.max_tokens} tokens, budget {args.budget}, max_parked_groups {args.max_parked}; steady state: "
          f"iterations {args.settle + 1}..{args.iterations}; seconds_to_target counts from iteration 1; "
          f"torch threads: {args.sync_threads} in synchronous modes; overlapped, {args.overlap_threads} training "
          f"and 1 rolling out" + "".join(f"; {name}={value}" for name, value in args.knobs.items()))
    print(f"{'engine':<7}{'metric':<26}" + "".join(f"{mode:>15}" for mode in modes)
          + "".join(f"{mode + '/whole':>22}" for mode in modes[1:]))
    for engine in args.engines.split(","):
        repeats = []  # the modes interleaved, repeat by repeat, so that a machine's drift meets every mode alike
        for repeat in range(args.repeats):
            figures = {}
            seed = int(base.get("seed", 0)) + repeat  # each repeat its own samples, the same for every mode
            for mode in modes:
                torch.set_num_threads(args.overlap_threads if "overlap" in mode else args.sync_threads)
                reports = run_loop({**base, "seed": seed, "rollout_engine": engine, **mode_settings(mode, args)},
                                   models_dir, prompt_records)
                figures[mode] = throughput(reports, args.samples, args.target, args.settle)
            repeats.append(figures)
        print_engine(engine, modes, repeats)


def print_engine(engine: str, modes: list[str], repeats: list[dict[str, dict[str, float]]]) -> None:
    """Each metric's median over the repeats per mode, and the median of each repeat's ratio to whole mode."""
    def median(values) -> float:
        values = [value for value in values if value == value]  # NaN (no whole figure) left out
        return statistics.median(values) if values else float("nan")

    def ratio(figures: dict, mode: str, name: str) -> float:
        whole = figures[modes[0]][name]
        return figures[mode][name] / whole if whole else float("nan")

    for name in repeats[0][modes[0]]:
        print(f"{engine:<7}{name:<26}" + "".join(f"{median(r[mode][name] for r in repeats):>15.3f}" for mode in modes)
              + "".join(f"{median(ratio(r, mode, name) for r in repeats):>22.2f}" for mode in modes[1:]), flush=True)
    if len(repeats) > 1:
        print(f"{engine:<7}responses_trained_per_s ratio by repeat: " + "; ".join(
            f"{mode} " + " ".join(f"{ratio(r, mode, 'responses_trained_per_s'):.2f}" for r in repeats)
            for mode in modes[1:]))
    print(f"{engine:<7}ceiling if rollouts cost nothing (whole iteration_s / the mode's train_s): " + ", ".join(
        f"{mode} {median(r[modes[0]]['iteration_s'] / r[mode]['train_s'] for r in repeats):.2f}x"
        for mode in modes[1:]), flush=True)


def learning(args, models_dir: Path) -> None:
    """The demo recipe on the easy problems in each mode from the same warmed-up model: accuracy by iteration."""
    from training.checkpoint import checkpoint_dir
    from training.recipes import TINY_DEMO

    prompt_records, iterations, budget = records(256, seed=0, difficulties=("easy",)), 24, 8
    recipe = {**TINY_DEMO, "model": "tiny", "iterations": iterations}
    runs = {"whole": run_loop(recipe, models_dir, prompt_records, output=models_dir / "learning-whole")}
    warm = str(checkpoint_dir(models_dir / "learning-whole", 0))  # the warm-up every run starts from
    partial = {**recipe, "model": warm, "warmup_sft_steps": 0, "partial_rollout_token_budget": budget}
    for mode, settings in (("partial", partial), ("overlap", {**partial, "overlap_rollouts": True})):
        runs[mode] = run_loop(settings, models_dir, prompt_records)
    print(f"\ntraining accuracy, demo recipe on the easy problems, {iterations} iterations "
          f"(partial and overlap: budget {budget} of {recipe['max_response_tokens']} tokens); mean KL(sampler || "
          "trainer) over the iterations, on tokens the trained policy sampled and on older ones")
    print(f"{'mode':<9}{'iterations 1-6':>16}{'last 6':>10}{'sampler KL':>12}{'stale KL':>10}  by iteration")
    for mode, reports in runs.items():
        curve = [report.train_accuracy for report in reports]
        print(f"{mode:<9}{statistics.mean(curve[:6]):>16.3f}{statistics.mean(curve[-6:]):>10.3f}"
              f"{mean_metric(reports, 'sampler_kl'):>12.2e}{mean_metric(reports, 'stale_sampler_kl'):>10.2e}  "
              + " ".join(f"{value:.2f}" for value in curve))


def mean_metric(reports, name: str) -> float:
    """The mean of an iteration metric over the iterations that report it (NaN when none does)."""
    values = [report.extra[name] for report in reports if name in report.extra]
    return statistics.mean(values) if values else float("nan")


def main() -> None:
    args = parse_arguments()
    from benchmarks.workloads import geometric_model, two_mode_model

    with tempfile.TemporaryDirectory() as scratch:
        models_dir = Path(scratch)
        model = two_mode_model(models_dir, PROMPT_END_TOKEN) if args.workload == "two_mode" \
            else geometric_model(models_dir)
        if args.engines:
            speed(args, model, models_dir)
        if args.learning:
            learning(args, models_dir)


if __name__ == "__main__":
    main()
