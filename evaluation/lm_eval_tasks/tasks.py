"""Mirrorlab's benchmarks as lm-evaluation-harness task configs, written as YAML files with absolute data paths.

A task reads a local JSONL file (`dataset_path: json`), normalises its records with our loaders' rules
(process_docs), prompts with the plain template of training/prompting.py, samples `repeats` responses per
problem and scores them with grading.verifier (process_results in utils.py). Nothing here imports lm_eval.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from evaluation.benchmarks import LM_EVAL_TASKS, LmEvalTask
from evaluation.benchmarks.spec import PLAIN_TEMPLATE_STOPS
from evaluation.datasets.files import require_file

TASK_PREFIX = "mirrorlab_"
TAG = "mirrorlab"  # `--tasks mirrorlab` runs every written task
UTILS = "evaluation.lm_eval_tasks.utils"
# End-of-turn markers of common chat models; HFLM adds the tokenizer's own end-of-sequence token.
STOP_SEQUENCES = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>")
FILE_HEADER = ("# Written by `python -m evaluation.lm_eval_tasks write`; rewrite it rather than editing it:\n"
               "# process_results names its metrics after the number of samples (repeats).\n")


# Task name -> LmEvalTask: the benchmarks whose module names an lm-eval task (evaluation.benchmarks).
TASKS: dict[str, LmEvalTask] = LM_EVAL_TASKS


@dataclass(frozen=True)
class GenerationSettings:
    """How responses are sampled: samples per problem (lm-eval's repeats), token limit, temperature, top-p."""

    samples_per_problem: int = 1
    max_tokens: int = 1024
    temperature: float = 0.0
    top_p: float = 1.0

    def __post_init__(self):
        if self.samples_per_problem < 1 or self.max_tokens < 1:
            raise ValueError(f"samples_per_problem and max_tokens must be at least 1, got {self.samples_per_problem} "
                             f"and {self.max_tokens}")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise ValueError(f"temperature must be >= 0 and top_p in (0, 1], got {self.temperature} and {self.top_p}")

    def generation_kwargs(self, extra_stops: tuple[str, ...] = ()) -> dict:
        """lm-eval generation_kwargs: greedy at temperature 0, else sampling with temperature and top_p."""
        kwargs = {"until": [*STOP_SEQUENCES, *extra_stops], "max_gen_toks": self.max_tokens}
        if self.temperature == 0:
            return {**kwargs, "do_sample": False, "temperature": 0.0}
        return {**kwargs, "do_sample": True, "temperature": float(self.temperature), "top_p": float(self.top_p)}


DEFAULT_GENERATION = GenerationSettings()


class FunctionRef(str):
    """A function written as a YAML `!function module.name` tag."""


class _TaskDumper(yaml.SafeDumper):
    """Writes FunctionRef values as `!function` tags."""


_TaskDumper.add_representer(FunctionRef, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


def pass_at_k_values(samples_per_problem: int) -> list[int]:
    """The k of the pass@k metrics reported for n samples: powers of two up to n, and n itself."""
    ks = {1, samples_per_problem}
    k = 2
    while k <= samples_per_problem:
        ks.add(k)
        k *= 2
    return sorted(ks)


def data_file(name: str, data_dir: Path) -> Path:
    """Absolute path of a task's data file; DatasetMissing names it when it is absent."""
    return require_file((Path(data_dir) / TASKS[name].data_file).resolve())


def task_config(name: str, data_dir: Path, generation: GenerationSettings = DEFAULT_GENERATION,
                cache_dir: Path | None = None, chat: bool = False) -> dict:
    """The lm-eval task config of one Mirrorlab task, functions as FunctionRef.

    cache_dir: Hugging Face datasets cache (None: HF_DATASETS_CACHE). chat: the prompt is the user turn of a
    chat template (problem, then the \\boxed instruction; run with --apply_chat_template), else the plain
    "Problem: ...\\nSolution:" template.
    """
    if name not in TASKS:
        raise KeyError(f"unknown Mirrorlab lm-eval task {name!r}; available: {', '.join(TASKS)}")
    spec = TASKS[name]
    dataset_kwargs: dict = {"data_files": {"test": str(data_file(name, data_dir))}}
    if cache_dir is not None:
        dataset_kwargs["cache_dir"] = str(Path(cache_dir).resolve())
    return {
        "task": name,
        "tag": [TAG],
        "dataset_path": "json",
        "dataset_kwargs": dataset_kwargs,
        "test_split": "test",
        "output_type": "generate_until",
        "process_docs": FunctionRef(f"{UTILS}.{spec.process_docs}"),
        "doc_to_text": FunctionRef(f"{UTILS}.doc_to_chat_text" if chat else f"{UTILS}.doc_to_text"),
        "doc_to_target": "{{answer}}",
        "process_results": FunctionRef(f"{UTILS}.process_{spec.answer_kind}_results"),
        # Every sample reaches process_results (lm-eval's default filter keeps only the first of the repeats).
        "filter_list": [{"name": "all_samples",
                         "filter": [{"function": "custom", "filter_fn": FunctionRef(f"{UTILS}.keep_all_samples")}]}],
        # the plain template also stops where the built-in runner cuts (a base model's invented next problem)
        "generation_kwargs": generation.generation_kwargs(extra_stops=() if chat else PLAIN_TEMPLATE_STOPS),
        "repeats": generation.samples_per_problem,
        "num_fewshot": 0,
        "metric_list": [{"metric": f"pass@{k}", "aggregation": "mean", "higher_is_better": True}
                        for k in pass_at_k_values(generation.samples_per_problem)],
        "metadata": {"version": 1.0, "description": spec.description, "answer_kind": spec.answer_kind,
                     "prompt": "chat" if chat else "plain"},
    }


def render_task_yaml(config: dict) -> str:
    """A task config as YAML text, FunctionRef values as `!function` tags."""
    return FILE_HEADER + yaml.dump(config, Dumper=_TaskDumper, sort_keys=False, allow_unicode=True)


def write_task_files(out_dir: Path, data_dir: Path, names: list[str] | None = None,
                     generation: GenerationSettings = DEFAULT_GENERATION,
                     cache_dir: Path | None = None, chat: bool = False) -> list[Path]:
    """Write <out_dir>/<task>.yaml for each named task (default: all), data paths absolute; returns the files.

    Every named task's data file must exist (DatasetMissing names the first that does not).
    """
    names = list(TASKS) if names is None else names
    configs = [task_config(name, data_dir, generation, cache_dir, chat) for name in names]  # fail before writing any
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for config in configs:
        path = out_dir / f"{config['task']}.yaml"
        path.write_text(render_task_yaml(config), encoding="utf-8")
        written.append(path)
    return written


def available_tasks(data_dir: Path) -> list[str]:
    """The Mirrorlab tasks whose data file is present under data_dir."""
    return [name for name, spec in TASKS.items() if (Path(data_dir) / spec.data_file).is_file()]
