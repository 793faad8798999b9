"""Our evaluation runner versus lm-evaluation-harness on the same model and benchmark, side by side.

Three ways to score the same greedy generations of one model on one benchmark:
- ours: evaluation.builtin_runner (batched generation through the torch rollout engine, our judges);
- lm-eval in process: simple_evaluate on the mirrorlab_<benchmark> task with the model in memory;
- the stock lm_eval CLI on the YAML task files, loading the model from disk (a subprocess).
Prints seconds, samples/s, the scores and whether they agree (and, for the in-process run, sample by sample).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "1")


def parse_arguments() -> argparse.Namespace:
    from evaluation.datasets import default_data_dir

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmark", default="math500", choices=["aime24", "aime25", "amc23", "math500"])
    parser.add_argument("--model", default="", help="model folder (default: the tiny preset, created in a temp dir)")
    parser.add_argument("--limit", type=int, default=40, help="problems (default: 40)")
    parser.add_argument("--max-tokens", type=int, default=64)
    shared = Path(__file__).resolve().parents[2] / "shared" / "datasets"  # the checkout's neighbour, when present
    parser.add_argument("--data-dir", type=Path, default=shared if shared.is_dir() else default_data_dir(),
                        help="benchmark files (default: ../shared/datasets beside the checkout, else the "
                             "MIRRORLAB_DATASETS_DIR folder)")
    parser.add_argument("--skip-cli", action="store_true", help="leave out the lm_eval CLI subprocess")
    return parser.parse_args()


def stock_cli(model_dir: str, arguments, work: Path) -> tuple[float, float]:
    """Seconds and pass@1 of `lm_eval` on the written task files (its index of built-in tasks included)."""
    task = f"mirrorlab_{arguments.benchmark}"
    subprocess.run([sys.executable, "-m", "evaluation.lm_eval_tasks", "write", "--data-dir", str(arguments.data_dir),
                    "--out", str(work / "tasks"), "--tasks", task, "--max-tokens", str(arguments.max_tokens)],
                   check=True, capture_output=True)
    lm_eval = Path(sys.executable).with_name("lm_eval")
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    started = time.perf_counter()
    subprocess.run([str(lm_eval), "--model", "hf", "--model_args", f"pretrained={model_dir}", "--device", "cpu",
                    "--batch_size", "32", "--tasks", task, "--include_path", str(work / "tasks"),
                    "--limit", str(arguments.limit), "--output_path", str(work / "out")],
                   check=True, capture_output=True, env=environment)
    seconds = time.perf_counter() - started
    results = json.loads(next((work / "out").rglob("results_*.json")).read_text())["results"][task]
    return seconds, next(value for key, value in results.items() if key.startswith("pass@1,"))


def main() -> None:
    from evaluation.context import EvalContext
    from evaluation.lm_eval_tasks.runner import run_lm_eval_task
    from evaluation.lm_eval_tasks.timing import time_run
    from evaluation.builtin_runner import run_builtin_benchmark
    from evaluation.suite_config import BenchmarkSettings
    from training.models.tiny import create_tiny_preset

    arguments = parse_arguments()
    work = Path(tempfile.mkdtemp(prefix="lm-eval-vs-runner-"))
    model_dir = arguments.model or str(create_tiny_preset(work / "tiny"))
    ours_settings = BenchmarkSettings(benchmark=arguments.benchmark, limit=arguments.limit,
                                      max_tokens=arguments.max_tokens)
    theirs_settings = BenchmarkSettings(benchmark=f"lm-eval:mirrorlab_{arguments.benchmark}", limit=arguments.limit,
                                        max_tokens=arguments.max_tokens)
    with EvalContext(model_dir, arguments.data_dir, log=lambda line: None) as context:
        generator = context.generator
        context.verifier.check("\\boxed{x^2+1}", "1+x^2")  # start the verifier pool outside both timings
        ours = time_run(run_builtin_benchmark, ours_settings, context)
        theirs = time_run(run_lm_eval_task, theirs_settings, generator.model, generator.tokenizer,
                          data_dir=arguments.data_dir, seed=0, verifier=context.verifier)
    by_problem = {sample.problem_id: sample for sample in theirs.outcome.samples}
    same_samples = sum(by_problem[sample.problem_id].correct == sample.correct
                       and by_problem[sample.problem_id].response.strip() == sample.response.strip()
                       for sample in ours.outcome.samples)
    print(f"{arguments.benchmark}, {arguments.limit} problems, greedy, {arguments.max_tokens} tokens, "
          f"model {model_dir}")
    print(f"{'runner':<28}{'seconds':>9}{'samples/s':>11}{'pass@1':>9}")
    for name, timed in (("ours (torch engine)", ours), ("lm-eval in process", theirs)):
        print(f"{name:<28}{timed.seconds:>9.2f}{timed.samples_per_second:>11.1f}{timed.outcome.score.score:>9.3f}")
    if not arguments.skip_cli:
        cli_seconds, cli_score = stock_cli(model_dir, arguments, work)
        print(f"{'lm_eval CLI (subprocess)':<28}{cli_seconds:>9.2f}"
              f"{arguments.limit / cli_seconds:>11.1f}{cli_score:>9.3f}")
        print(f"CLI score agrees with ours: {abs(cli_score - ours.outcome.score.score) < 1e-9}")
    print(f"lm-eval in process / ours, seconds: {theirs.seconds / ours.seconds:.2f}x")
    print(f"scores agree: {abs(theirs.outcome.score.score - ours.outcome.score.score) < 1e-9}; "
          f"samples identical (response and verdict): {same_samples}/{len(ours.outcome.samples)}")


if __name__ == "__main__":
    main()
