"""Run an RL config from YAML with no web server: `mirrorlab-train config.yaml`.

The YAML holds the RL knobs (see the README's table) plus three keys of its own:
`prompts` (`synthetic-arithmetic`, or a JSONL/CSV prompt file), `prompt_count` (synthetic only)
and `output_dir` (checkpoints; a second run with the same folder resumes).
Data parallel over N processes: `torchrun --nproc_per_node N -m training.cli config.yaml`
(see training/distributed.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from common.knobs import ConfigError, config_to_dict, parse_config
from common.prompt_files import guess_format, parse_prompt_file
from training.config import RLConfig
from training.types import IterationReport, PromptRecord, RunPaths, TrainingHooks

CLI_KEYS = {"prompts": "synthetic-arithmetic", "prompt_count": 256, "output_dir": "runs/cli"}


def load_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as error:
        raise SystemExit(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise SystemExit(f"{path}: expected a mapping of settings at the top level")
    return data


def load_prompts(source: str, count: int, seed: int) -> list[PromptRecord]:
    """The synthetic task, or the prompts of a JSONL/CSV file (a bad line stops with its number)."""
    if source == "synthetic-arithmetic":
        from training.tasks.arithmetic import generate

        return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty,
                             domain="math") for p in generate(count, seed=seed)]
    path = Path(source)
    try:
        parsed = parse_prompt_file(path.read_bytes(), guess_format(path.name))
    except (OSError, ValueError) as error:
        raise SystemExit(f"prompts: {source}: {error}") from None
    return [PromptRecord(prompt_id=str(item.line), problem=item.problem, answer=item.answer,
                         test_cases=item.test_cases, domain=item.domain, difficulty=item.difficulty,
                         pass_rate=item.pass_rate, image=item.image) for item in parsed]


def progress_hooks(total: int) -> tuple[TrainingHooks, Any]:
    from tqdm import tqdm

    bar = tqdm(total=total, unit="it", desc="RL")

    def on_iteration(report: IterationReport) -> None:
        bar.n = report.iteration
        accuracy = "-" if report.train_accuracy is None else f"{report.train_accuracy:.3f}"
        length = "-" if report.mean_response_length is None else f"{report.mean_response_length:.1f}"
        bar.set_postfix(accuracy=accuracy, length=length, refresh=True)

    hooks = TrainingHooks(on_iteration=on_iteration, log=lambda line: bar.write(line),
                          on_checkpoint=lambda report: bar.write(f"checkpoint: {report.path}"))
    return hooks, bar


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mirrorlab-train", description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, help="YAML file of RL knobs plus prompts/prompt_count/output_dir")
    parser.add_argument("--models-dir", type=Path, default=Path(os.environ.get("MIRRORLAB_DATA_DIR", "data")) / "models",
                        help="where model presets such as `tiny` are created and cached")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    args = parser.parse_args(argv)
    data = load_yaml(args.config)
    cli = {key: data.pop(key, default) for key, default in CLI_KEYS.items()}
    try:
        config = parse_config(RLConfig, data)
    except ConfigError as error:
        raise SystemExit(f"{args.config}: " + "; ".join(f"{k}: {v}" for k, v in error.errors.items())) from None
    if args.print_config:
        print(yaml.safe_dump({**cli, **config_to_dict(config)}, sort_keys=False))
        return 0
    from training import distributed
    from training.engines import trainer_backends

    records = load_prompts(str(cli["prompts"]), int(cli["prompt_count"]), config.seed)
    paths = RunPaths(output_dir=Path(cli["output_dir"]), models_dir=args.models_dir)
    context = distributed.init_from_environment()  # under torchrun: join the process group
    hooks, bar = progress_hooks(config.iterations) if context.is_main else (TrainingHooks(), None)
    try:
        outcome = trainer_backends.get(config.trainer_backend)(config, records, paths, hooks)
    finally:
        if bar is not None:
            bar.close()
        distributed.shutdown()
    if context.is_main:
        print(f"done: {outcome.iterations_done} iterations; checkpoints in {paths.output_dir / 'checkpoints'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
