"""Run an RL config from YAML with no web server: `mirrorlab-train config.yaml`.

The YAML holds the RL knobs (see the README's table) plus three keys of its own:
`prompts` (`synthetic-arithmetic`, or a JSONL/CSV prompt file), `prompt_count` (synthetic only)
and `output_dir` (checkpoints; a second run with the same folder resumes).
Data parallel over N processes: `torchrun --nproc_per_node N -m training.cli config.yaml`
(see training/distributed.py). A mistake the user can fix (the file, a key, the model, a resume
with a changed config) is one line on stderr and exit code 2.
The CLI runs on the researcher's own machine with their own file permissions, so `model`, `judge_model`,
`prompts` and `output_dir` may name any local path: the web app's path roots (MIRRORLAB_MODEL_ROOTS,
MIRRORLAB_IMPORT_ROOTS; common/path_rules.py) bind the web app and its workers only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from common.knobs import ConfigError, config_to_dict, parse_config
from common.paths import data_dir
from common.prompt_files import guess_format, parse_prompt_file
from training.config import RLConfig
from training.types import IterationReport, PromptRecord, RunPaths, TrainingHooks, images_refusal

SYNTHETIC = "synthetic-arithmetic"
CLI_KEYS = {"prompts": SYNTHETIC, "prompt_count": 256, "output_dir": "runs/cli"}
USAGE_ERROR = 2  # exit code of a mistake in the command line or the config, as argparse's


class CliError(Exception):
    """A mistake in the command line, the config file or its prompts: one line on stderr, exit code 2."""


class DuplicateKey(yaml.constructor.ConstructorError):
    """A YAML mapping gives the same key twice."""


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader refusing a key given twice in one mapping (plain YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        first_lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = first_lines.get(key)
            except TypeError:  # an unhashable key: the base class refuses it with its own message
                continue
            if first is not None:
                raise DuplicateKey(None, None, f"duplicate key {key!r} (first given on line {first})",
                                   key_node.start_mark)
            first_lines[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: Path) -> dict[str, Any]:
    """The config file's top-level mapping; CliError names the file (and line) of any problem."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{path}: is a folder, not a YAML config file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"{path}: cannot read it ({getattr(error, 'strerror', None) or error})") from None
    try:
        data = yaml.load(text, Loader=UniqueKeyLoader)
    except DuplicateKey as error:
        raise CliError(f"{path} line {error.problem_mark.line + 1}: {error.problem}") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" line {mark.line + 1}" if mark else ""
        raise CliError(f"{path}{where}: not valid YAML: {error.problem or error.context}") from None
    except yaml.YAMLError as error:
        raise CliError(f"{path}: not valid YAML: {str(error).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"{path}: expected a mapping of settings (name: value) at the top level")
    return data


def cli_settings(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Pop prompts, prompt_count and output_dir from the YAML data: (values, errors by key)."""
    values = {key: data.pop(key, default) for key, default in CLI_KEYS.items()}
    errors = {}
    prompts, count, output_dir = values["prompts"], values["prompt_count"], values["output_dir"]
    if not isinstance(prompts, str) or not prompts.strip():
        errors["prompts"] = f"must be {SYNTHETIC} or the path of a JSONL/CSV prompt file"
    elif prompts != SYNTHETIC:
        errors.update(prompt_file_error(Path(prompts)))
    if isinstance(count, bool) or not isinstance(count, int):
        errors["prompt_count"] = f"must be a whole number, not {count!r}"
    elif count < 1:
        errors["prompt_count"] = f"must be at least 1, not {count}"
    if not isinstance(output_dir, str) or not output_dir.strip():
        errors["output_dir"] = "must be the path of a folder for the run's checkpoints"
    return values, errors


def prompt_file_error(path: Path) -> dict[str, str]:
    """{'prompts': why} when the prompt file is missing, a folder, or neither .jsonl nor .csv; else {}."""
    if not path.exists():
        return {"prompts": f"no such file {str(path)!r} (use {SYNTHETIC} or a JSONL/CSV prompt file)"}
    if not path.is_file():
        return {"prompts": f"{str(path)!r} is not a file"}
    try:
        guess_format(path.name)
    except ValueError as error:
        return {"prompts": str(error)}
    return {}


def parse_cli_config(path: Path) -> tuple[dict[str, Any], RLConfig]:
    """(prompts/prompt_count/output_dir, the RL config) of a YAML file; CliError names every refused key."""
    data = load_yaml(path)
    cli, errors = cli_settings(data)
    try:
        config = parse_config(RLConfig, data)
    except ConfigError as error:
        errors.update(error.errors)
    if errors:
        raise CliError(f"{path}: " + "; ".join(f"{key}: {reason}" for key, reason in errors.items()))
    return cli, config


def load_prompts(source: str, count: int, seed: int) -> list[PromptRecord]:
    """The synthetic task, or the prompts of a JSONL/CSV file (a bad line stops with its number)."""
    if source == SYNTHETIC:
        from training.tasks.arithmetic import generate

        return [PromptRecord(prompt_id=p.problem_id, problem=p.problem, answer=p.answer, difficulty=p.difficulty,
                             domain="math") for p in generate(count, seed=seed)]
    path = Path(source)
    try:
        parsed = parse_prompt_file(path.read_bytes(), guess_format(path.name))
    except (OSError, ValueError) as error:
        raise CliError(f"prompts: {source}: {error}") from None
    return [PromptRecord(prompt_id=str(item.line), problem=item.problem, answer=item.answer,
                         test_cases=item.test_cases, domain=item.domain, difficulty=item.difficulty,
                         pass_rate=item.pass_rate, image=item.image) for item in parsed]


def progress_hooks(total: int) -> tuple[TrainingHooks, Any]:
    """Hooks drawing a progress bar (on stderr) from the first iteration on: lines before it (the warm-up, a
    resume) print above, so the bar's rate and time left count iterations only."""
    from tqdm import tqdm

    holder: dict[str, Any] = {}

    def write(line: str) -> None:
        if "bar" in holder:
            holder["bar"].write(line)
        else:
            tqdm.write(line, file=sys.stderr)

    def on_iteration(report: IterationReport) -> None:
        if "bar" not in holder:  # a resumed run starts its bar where it resumed
            holder["bar"] = tqdm(total=total, unit="it", desc="RL", initial=report.iteration - 1)
        bar = holder["bar"]
        bar.n = report.iteration
        accuracy = "-" if report.train_accuracy is None else f"{report.train_accuracy:.3f}"
        length = "-" if report.mean_response_length is None else f"{report.mean_response_length:.1f}"
        bar.set_postfix(accuracy=accuracy, length=length, refresh=True)

    def approve_removals(iterations: list[int]) -> list[int]:
        write(f"removing checkpoints (keep_last_checkpoints): iterations {', '.join(map(str, iterations))}")
        return iterations

    def close() -> None:
        if "bar" in holder:
            holder.pop("bar").close()

    hooks = TrainingHooks(on_iteration=on_iteration, log=write,
                          on_checkpoint=lambda report: write(f"checkpoint: {report.path}"),
                          approve_checkpoint_removals=approve_removals)
    return hooks, close


def checkpoint_summary(output_dir: Path) -> str:
    """Where the run's checkpoints are, or that it wrote none (the noop-test backend saves nothing)."""
    folder = output_dir / "checkpoints"
    if folder.is_dir() and any(folder.iterdir()):
        return f"checkpoints in {folder}"
    return "no checkpoints written"


def train(args: argparse.Namespace) -> int:
    """Parse the config, then run it; CliError for any mistake the user can fix."""
    from training.context_window import ContextWindowError, launch_context_errors
    from training.models.resolve import ModelUnavailable
    from training.resume_config import ResumeMismatch

    cli, config = parse_cli_config(args.config)
    if args.print_config:
        print(yaml.safe_dump({**cli, **config_to_dict(config)}, sort_keys=False))
        return 0
    from training import distributed
    from training.backends import trainer_backends

    records = load_prompts(cli["prompts"], cli["prompt_count"], config.seed)
    with_images = [record.prompt_id for record in records if record.image]
    if with_images:
        raise CliError(f"{args.config}: prompts: " + images_refusal(len(with_images), f"line {with_images[0]}"))
    # prompts plus max_response_tokens must fit the context window (checked here where the model's files are local,
    # and again, exactly, at run start)
    too_long = launch_context_errors(config, {r.prompt_id: r.problem for r in records}, args.models_dir)
    if too_long:
        raise CliError(f"{args.config}: " + "; ".join(too_long.values()))
    paths = RunPaths(output_dir=Path(cli["output_dir"]), models_dir=args.models_dir)
    context = distributed.init_from_environment()  # under torchrun: join the process group
    hooks, close_bar = progress_hooks(config.iterations) if context.is_main else (TrainingHooks(), lambda: None)
    try:
        outcome = trainer_backends.get(config.trainer_backend)(config, records, paths, hooks)
    except (ModelUnavailable, ResumeMismatch, ContextWindowError) as error:
        raise CliError(f"{args.config}: {error}") from None
    finally:
        close_bar()
        distributed.shutdown()
    if context.is_main:
        print(f"done: {outcome.iterations_done} iterations; {checkpoint_summary(paths.output_dir)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mirrorlab-train", description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path, help="YAML file of RL knobs plus prompts/prompt_count/output_dir")
    parser.add_argument("--models-dir", type=Path, default=data_dir() / "models",
                        help="where model presets such as `tiny` are created and cached "
                             "(default: $MIRRORLAB_DATA_DIR/models)")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    args = parser.parse_args(argv)
    try:
        return train(args)
    except CliError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
