"""The four long2short methods side by side on the tiny model: accuracy and mean tokens against the parent.

From one run: a long-CoT parent on the synthetic arithmetic task (the demo recipe, shortened: warm-up
SFT saved as checkpoint 0, then RL, which lengthens responses), or an existing run's folder via
--parent-run; then model merging (with checkpoint 0 as the short model), shortest rejection sampling,
DPO and long2short RL, each from the parent. Every model is scored on the same held-out problems with
the same sampling settings: the token-efficiency comparison of the report's figure 7.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Method settings scaled to the tiny model (the defaults suit 7B models: their learning rates barely move it).
TINY_METHOD_SETTINGS = {
    "merge": {"parent_weight": 0.5},
    "shortest_rejection": {"samples_per_problem": 8, "learning_rate": 1e-4, "epochs": 2},
    "dpo": {"samples_per_problem": 8, "learning_rate": 5e-5, "beta": 0.1, "epochs": 2},
    "long2short_rl": {"iterations": 8, "learning_rate": 2e-4, "length_penalty_weight": 0.5,
                      "max_response_fraction": 0.5},
}


def records(count: int, seed: int, split: str = "train"):
    """Arithmetic problems of a split: "train" for the run and the methods, "held_out" for the scores."""
    from training.tasks.arithmetic import generate
    from training.types import PromptRecord

    return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty)
            for p in generate(count, seed=seed, split=split)]


def build_parent(run_dir: Path, models_dir: Path, args) -> float:
    """Warm-up SFT (checkpoint 0, the short model) then RL (the long parent); returns the seconds taken."""
    from common.knobs import parse_config
    from training.config import RLConfig
    from training.loop import run
    from training.recipes import TINY_DEMO
    from training.types import RunPaths, TrainingHooks

    config = parse_config(RLConfig, {**TINY_DEMO, "warmup_sft_steps": args.warmup_steps,
                                     "iterations": args.parent_iterations,
                                     "checkpoint_every_iterations": args.parent_iterations})
    started = time.perf_counter()
    run(config, records(args.problems, seed=0), RunPaths(run_dir, models_dir), TrainingHooks(log=print))
    return time.perf_counter() - started


def parent_checkpoints(run_dir: Path) -> tuple[Path, Path, dict]:
    """(parent = the run's newest checkpoint, short = its warm-up checkpoint 0, the run's resolved config)."""
    from training.checkpoint import CONFIG_FILE, checkpoint_dir, latest_checkpoint

    newest, short = latest_checkpoint(run_dir), checkpoint_dir(run_dir, 0)
    if newest is None or not short.is_dir():
        raise SystemExit(f"{run_dir} needs a warm-up checkpoint 0 and a later one (a run with warmup_sft_steps > 0)")
    return newest.path, short, json.loads((newest.path / CONFIG_FILE).read_text())


def run_method(method: str, parent: Path, short: Path, parent_config: dict, work: Path, args) -> tuple[Path, float]:
    """One method from the parent; returns (its checkpoint, seconds)."""
    from common.knobs import parse_config
    from training.config import LONG2SHORT_CONFIGS
    from training.long2short import long2short_methods
    from training.long2short.base import Long2ShortHooks, Long2ShortJob

    settings = dict(TINY_METHOD_SETTINGS[method])
    if method in ("shortest_rejection", "dpo"):
        settings["max_response_tokens"] = parent_config["max_response_tokens"]
    job = Long2ShortJob(parent_model_path=parent, parent_config=parent_config, records=tuple(records(args.problems, 0)),
                        output_dir=work / method, models_dir=work / "models",
                        merge_model_paths=(short,) if method == "merge" else ())
    started = time.perf_counter()
    outcome = long2short_methods.get(method)(parse_config(LONG2SHORT_CONFIGS[method], settings), job,
                                             Long2ShortHooks(log=lambda line: print(f"[{method}] {line}")))
    return outcome.checkpoint_path, time.perf_counter() - started


def evaluate(path: Path, max_tokens: int, args) -> tuple[float, float]:
    """(accuracy, mean response tokens) on the held-out problems, 4 samples each at temperature 1."""
    from training.heldout import held_out_accuracy
    from training.models.loading import load_model, load_tokenizer
    from training.rollout.base import SamplingSettings
    from training.rollout.torch_engine import TorchRolloutEngine

    tokenizer = load_tokenizer(str(path))
    engine = TorchRolloutEngine(load_model(str(path)), tokenizer)
    held_out = records(args.held_out, seed=999, split="held_out")
    result = held_out_accuracy(engine, tokenizer, held_out, samples_per_problem=4,
                               settings=SamplingSettings(max_new_tokens=max_tokens, temperature=1.0, seed=1234))
    return result.accuracy, result.mean_response_tokens


def print_table(rows: list[tuple[str, float, float, float]], failures: dict[str, str]) -> None:
    """rows: (method, accuracy, mean tokens, seconds); the first row is the parent."""
    _, parent_accuracy, parent_tokens, _ = rows[0]
    print(f"{'method':<20}{'accuracy':>10}{'mean tokens':>13}{'d acc (pts)':>13}{'d tokens':>10}"
          f"{'acc/1k tok':>12}{'seconds':>10}")
    for method, accuracy, tokens, seconds in rows:
        print(f"{method:<20}{accuracy:>10.3f}{tokens:>13.1f}{100 * (accuracy - parent_accuracy):>+13.1f}"
              f"{100 * (tokens / parent_tokens - 1):>+9.1f}%{1000 * accuracy / max(tokens, 1e-9):>12.2f}"
              f"{seconds:>10.1f}")
    for method, reason in failures.items():
        print(f"{method}: failed: {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parent-run", type=Path, help="an existing run folder (checkpoints/iteration-*) to start "
                        "from instead of training a parent; it needs the warm-up checkpoint 0")
    parser.add_argument("--warmup-steps", type=int, default=400, help="parent: warm-up SFT steps")
    parser.add_argument("--parent-iterations", type=int, default=20, help="parent: RL iterations after the warm-up")
    parser.add_argument("--problems", type=int, default=128, help="training problems (parent and methods)")
    parser.add_argument("--held-out", type=int, default=128, help="held-out problems scored, 4 samples each")
    parser.add_argument("--methods", default=",".join(TINY_METHOD_SETTINGS), help="comma-separated methods to run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        run_dir, parent_seconds = args.parent_run, 0.0
        if run_dir is None:
            run_dir = work / "parent"
            parent_seconds = build_parent(run_dir, work / "models", args)
        parent, short, parent_config = parent_checkpoints(run_dir)
        max_tokens = parent_config["max_response_tokens"]
        rows, failures = [("parent", *evaluate(parent, max_tokens, args), parent_seconds)], {}
        rows.append(("short (checkpoint 0)", *evaluate(short, max_tokens, args), 0.0))
        for method in args.methods.split(","):
            try:
                checkpoint, seconds = run_method(method, parent, short, parent_config, work, args)
            except ValueError as error:  # e.g. no correct sample to keep or pair: reported under the table
                failures[method] = str(error)
                continue
            rows.append((method, *evaluate(checkpoint, max_tokens, args), seconds))
        print_table(rows, failures)


if __name__ == "__main__":
    main()
