"""Run an lm-evaluation-harness task on a model in memory: the runner of "lm-eval:<task>" suite benchmarks.

Mirrorlab's own tasks (mirrorlab_aime24, ...; see tasks.py) read local files and run anywhere; any other
lm-eval task (mmlu, ifeval, gpqa...) is looked up among lm-eval's built-in tasks, whose data come from the
Hugging Face hub: offline (the default) only those already in the HF cache can run, and one that is not
fails with LmEvalTaskError naming the task. What a sample row holds for each kind of task:

- Mirrorlab tasks: every one of the n sampled responses, judged as our runner judges (utils.judge_responses); the
  score is score_benchmark's Pass@1 averaged (the same numbers as the built-in runner), lm-eval's own
  pass@k are kept in metadata["lm_eval_metrics"].
- Other generative tasks: one row per problem, the raw response, the task's filtered answer as
  extracted_answer, correct = the task's main metric (its first) equals 1; score = lm-eval's value.
- Loglikelihood tasks (multiple choice): response = the option with the highest log-likelihood, 0 tokens.

Token counts: lm-eval returns text, so a response is counted by re-encoding it with the tokenizer (capped at
max_tokens); truncated = the count reached max_tokens. A model that emitted non-canonical token splits can
count a few tokens fewer than it generated, so truncation can be under-reported for such responses.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tempfile
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence

from evaluation.lm_eval_tasks.tasks import TASK_PREFIX, TASKS, GenerationSettings, write_task_files
from evaluation.outcome import BenchmarkOutcome, SampleOutcome, truncation_applied, truncation_metadata, votes
from evaluation.scoring import (
    FRACTION, HIGHER_IS_BETTER, RAW, SCORE_SCALE, BenchmarkScore, bootstrap_ci, score_benchmark,
)
from evaluation.suite_config import LM_EVAL_PREFIX, BenchmarkSettings
from grading.verifier.equivalence import same_value
from grading.verifier.fast_compare import value_key

OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
DEFAULT_BATCH_SIZE = 16
# lm-eval metrics on scales of their own (BLEU, chrF and TER on 0-100, perplexities, bits per byte, the max and
# diff of sentence BLEU/ROUGE); bleu_acc and rouge1_acc are fractions
RAW_METRIC = re.compile(r"bleu|sacrebleu|chrf|ter|bits_per_byte|\w*perplexity|(?:bleu|rouge\w*)_(?:max|diff)",
                        re.IGNORECASE)


class LmEvalTaskError(RuntimeError):
    """An lm-eval task cannot run: unknown name, data unreachable, or settings it does not support."""


@dataclass(frozen=True)
class _TaskRun:
    """One leaf task's logged samples, turned into rows, with its per-problem values and metrics."""

    name: str
    problems: list[list[SampleOutcome]]  # (problems, samples)
    problem_values: list[float | None]  # the main metric per problem; None when not a number
    main_metric: str  # "pass@1" or lm-eval's "metric,filter" key
    metrics: dict[str, Any]


def lm_eval_task_name(benchmark: str) -> str:
    """"lm-eval:gsm8k" -> "gsm8k"."""
    if not benchmark.startswith(LM_EVAL_PREFIX) or len(benchmark) == len(LM_EVAL_PREFIX):
        raise LmEvalTaskError(f"benchmark {benchmark!r} is not an lm-eval task; name one as {LM_EVAL_PREFIX}<task>")
    return benchmark[len(LM_EVAL_PREFIX):]


# ----------------------------------------------------------------------------- the Hugging Face hub

@contextmanager
def hub_offline() -> Iterator[None]:
    """HF_HUB_OFFLINE / HF_DATASETS_OFFLINE on inside the block, the previous state restored after it.

    huggingface_hub and datasets read these variables once, at import, so their module flags are set too.
    Process-wide, like the variables themselves.
    """
    import datasets.config
    import huggingface_hub.constants

    saved_environment = {name: os.environ.get(name) for name in OFFLINE_VARIABLES}
    saved_flags = (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE,
                   datasets.config.HF_DATASETS_OFFLINE)
    os.environ.update({name: "1" for name in OFFLINE_VARIABLES})
    huggingface_hub.constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    datasets.config.HF_DATASETS_OFFLINE = True
    try:
        yield
    finally:
        for name, value in saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE,
         datasets.config.HF_DATASETS_OFFLINE) = saved_flags


@contextmanager
def datasets_cache(cache_dir: Path) -> Iterator[None]:
    """Point the Hugging Face datasets cache (HF_DATASETS_CACHE) at cache_dir inside the block."""
    import datasets.config

    saved = datasets.config.HF_DATASETS_CACHE
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    datasets.config.HF_DATASETS_CACHE = Path(cache_dir)
    try:
        yield
    finally:
        datasets.config.HF_DATASETS_CACHE = saved


def _default_cache_is_writable() -> bool:
    """Whether the datasets cache (HF_DATASETS_CACHE, default ~/.cache/huggingface/datasets) can be written."""
    import datasets.config

    folder = Path(datasets.config.HF_DATASETS_CACHE)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return os.access(folder, os.W_OK | os.X_OK)


# ----------------------------------------------------------------------------- task lookup

@lru_cache(maxsize=1)
def builtin_task_manager():
    """lm-eval's index of its ~14k built-in tasks, groups and tags; built once per process (~15 s)."""
    from lm_eval.tasks import TaskManager

    return TaskManager()


def _unknown_task(name: str, known: Sequence[str]) -> LmEvalTaskError:
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.6)
    hint = f" Close matches: {', '.join(close)}." if close else ""
    return LmEvalTaskError(
        f"lm-eval task {name!r} is unknown: it is neither one of Mirrorlab's tasks ({', '.join(TASKS)}) nor "
        f"among lm-eval's {len(known)} built-in tasks, groups and tags.{hint} `lm_eval ls tasks` lists them.")


def _task_manager_for(name: str, generation: GenerationSettings, data_dir: Path, work_dir: Path,
                      cache_dir: Path | None, include_path: Sequence[Path], chat: bool):
    """(TaskManager holding `name`, whether it is a Mirrorlab task); Mirrorlab tasks are written to work_dir."""
    from lm_eval.tasks import TaskManager

    if name.startswith(TASK_PREFIX):
        if name not in TASKS:
            raise LmEvalTaskError(f"lm-eval task {name!r} is unknown; Mirrorlab's tasks are {', '.join(TASKS)}")
        write_task_files(work_dir, data_dir, [name], generation, cache_dir, chat)
        return TaskManager(include_path=str(work_dir), include_defaults=False), True
    if include_path:
        manager = TaskManager(include_path=[str(path) for path in include_path], include_defaults=False)
        if name in manager.all_tasks:
            return manager, False
    manager = builtin_task_manager()
    if name not in manager.all_tasks:
        raise _unknown_task(name, manager.all_tasks)
    return manager, False


def _load(manager, name: str, offline: bool) -> list:
    """The task, group or tag's top-level objects; unreachable data raises LmEvalTaskError naming the task."""
    from datasets.exceptions import DatasetNotFoundError

    try:
        loaded = manager.load([name])
    except (ConnectionError, DatasetNotFoundError, FileNotFoundError) as error:
        where = ("offline (HF_HUB_OFFLINE=1): only datasets already in the Hugging Face cache can load"
                 if offline else "from the Hugging Face hub or the local cache")
        raise LmEvalTaskError(
            f"lm-eval task {name!r} cannot load its data {where}: {error}. Run it where the hub is reachable "
            f"(offline=False), download the dataset into the HF cache first, or use a task that reads local "
            f"files ({', '.join(TASKS)}).") from error
    if name in loaded.get("groups", {}):
        return [loaded["groups"][name]]
    return list(loaded["tasks"].values())


# ----------------------------------------------------------------------------- the run

def run_lm_eval_task(settings: BenchmarkSettings, model, tokenizer, *, data_dir: Path, seed: int,
                     batch_size: int = DEFAULT_BATCH_SIZE, offline: bool = True, cache_dir: Path | None = None,
                     include_path: Sequence[Path] = (), verifier=None,
                     apply_chat_template: bool | None = None) -> BenchmarkOutcome:
    """Evaluate model on the lm-eval task named by settings.benchmark ("lm-eval:<task>").

    data_dir: benchmark files for Mirrorlab's tasks. offline: no hub access (HF_HUB_OFFLINE and
    HF_DATASETS_OFFLINE set for the run, then restored). cache_dir: HF datasets cache (default: a temporary
    folder for Mirrorlab's tasks; the usual HF cache for other tasks when writable, else a temporary folder).
    include_path: folders of the user's own lm-eval task YAMLs, searched before the built-in tasks.
    verifier: a MathVerifier for time-limited checks (default: one made and closed here).
    apply_chat_template: None = when the tokenizer has one. The model's train/eval mode is restored after.
    """
    name = lm_eval_task_name(settings.benchmark)
    ours = name.startswith(TASK_PREFIX)
    if not ours and settings.samples_per_problem > 1:
        raise LmEvalTaskError(
            f"lm-eval task {name!r}: samples_per_problem={settings.samples_per_problem} applies only to "
            f"Mirrorlab's tasks ({', '.join(TASKS)}); a built-in task samples as its own config says (repeats "
            f"and filters), so set samples_per_problem to 1")
    generation = GenerationSettings(settings.samples_per_problem, settings.max_tokens, settings.temperature,
                                    settings.top_p)
    if apply_chat_template is None:
        apply_chat_template = bool(getattr(tokenizer, "chat_template", None))
    with ExitStack() as stack:
        work_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mirrorlab-lm-eval-")))
        if offline:
            stack.enter_context(hub_offline())
        cache_dir = _enter_datasets_cache(stack, cache_dir, work_dir, ours)
        manager, ours = _task_manager_for(name, generation, Path(data_dir), work_dir / "tasks", cache_dir,
                                          include_path, apply_chat_template)
        top_level = _load(manager, name, offline)
        stack.enter_context(_checks_through(stack, verifier))
        overrides = _sampling_overrides(generation, ours)
        results = _evaluate(top_level, manager, model, tokenizer, settings, overrides, seed, batch_size,
                            apply_chat_template)
    task_runs = _task_runs(results, tokenizer, generation, ours)
    return _outcome(settings, name, results, task_runs, ours,
                    {"offline": offline, "apply_chat_template": apply_chat_template, "seed": seed,
                     "generation_overrides": overrides, "data_dir": str(Path(data_dir).resolve()) if ours else None})


def _enter_datasets_cache(stack: ExitStack, cache_dir: Path | None, work_dir: Path, ours: bool) -> Path | None:
    """The HF datasets cache of the run, entered on stack: cache_dir, else a temporary one for our tasks and
    where the usual cache cannot be written; None keeps the usual cache."""
    if cache_dir is None and (ours or not _default_cache_is_writable()):
        cache_dir = work_dir / "datasets-cache"
    if cache_dir is None:
        return None
    stack.enter_context(datasets_cache(Path(cache_dir)))
    return Path(cache_dir)


def _checks_through(stack: ExitStack, verifier):
    """use_verifier() with the given MathVerifier, else one made here and closed with the stack."""
    from evaluation.lm_eval_tasks.utils import use_verifier
    from grading.verifier import MathVerifier

    if verifier is None:
        verifier = stack.enter_context(MathVerifier(workers=1))
    return use_verifier(verifier)


def run_lm_eval_benchmark(settings: BenchmarkSettings, context) -> BenchmarkOutcome:
    """The "lm-eval" entry of evaluation.runners: run_lm_eval_task on an EvalContext's model and verifier.

    lm-eval runs the whole task in one call, so a stop request is honoured before it starts, not during it.
    """
    context.check_stop()
    generator = context.generator
    context.log(f"{settings.benchmark}: running through lm-evaluation-harness (offline)")
    return run_lm_eval_task(settings, generator.model, generator.tokenizer, data_dir=context.data_dir,
                            seed=context.seed, verifier=context.verifier)


def _evaluate(top_level: list, manager, model, tokenizer, settings: BenchmarkSettings,
              gen_kwargs: dict, seed: int, batch_size: int, apply_chat_template: bool) -> dict:
    """lm-eval's simple_evaluate on an HFLM wrapping the in-memory model, samples logged; gen_kwargs update
    every generative task's generation_kwargs."""
    from lm_eval import simple_evaluate

    try:
        from lm_eval.models.huggingface import HFLM
    except ModuleNotFoundError as error:  # accelerate comes with the lm-eval[hf] extra only
        raise LmEvalTaskError(f"lm-eval's Hugging Face backend cannot load ({error}); install lm-eval[hf]") from error
    was_training = model.training
    try:
        lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=batch_size)  # calls model.eval()
        results = simple_evaluate(
            model=lm, tasks=top_level, task_manager=manager, limit=settings.limit, log_samples=True,
            gen_kwargs=gen_kwargs, bootstrap_iters=0, apply_chat_template=apply_chat_template,
            random_seed=seed, numpy_random_seed=seed, torch_random_seed=seed, fewshot_random_seed=seed)
    finally:
        model.train(was_training)
    if results is None:
        raise LmEvalTaskError("lm-eval returned no results (not rank 0 of a distributed run)")
    return results


def _sampling_overrides(generation: GenerationSettings, ours: bool) -> dict:
    """What the suite sets of every generative task's sampling; a task keeps its own stop sequences.

    Mirrorlab's tasks take all of it. A built-in task takes the token limit, and the suite's temperature and
    top_p only when the suite samples (temperature above 0): at the default 0 it samples as its own config says,
    so a self-consistency task (do_sample, repeats: 64) is not turned into 64 identical greedy answers."""
    kwargs = {key: value for key, value in generation.generation_kwargs().items() if key != "until"}
    if ours or generation.temperature > 0:
        return kwargs
    return {"max_gen_toks": kwargs["max_gen_toks"]}


# ----------------------------------------------------------------------------- logged samples -> rows

def _token_count(text: str, tokenizer, max_tokens: int) -> int:
    """Tokens of a response, re-encoded without special tokens, capped at max_tokens."""
    return min(len(tokenizer(text, add_special_tokens=False)["input_ids"]), max_tokens)


def _as_number(value: Any) -> float | None:
    """A per-problem metric value as a float, or None (corpus metrics log tuples)."""
    if isinstance(value, (bool, int, float)) and not (isinstance(value, float) and math.isnan(value)):
        return float(value)
    return None


def _metric_values(task_results: dict) -> dict[str, Any]:
    """lm-eval's aggregated metrics of one task or group: {"metric,filter": value}, stderr and alias left out."""
    return {key: float(value) if _as_number(value) is not None else value for key, value in task_results.items()
            if "," in key and "_stderr," not in key and not isinstance(value, str)}


def _task_runs(results: dict, tokenizer, generation: GenerationSettings, ours: bool) -> list[_TaskRun]:
    """Every leaf task's logged samples as rows."""
    runs = []
    for task_name, logged in results["samples"].items():
        metrics = _metric_values(results["results"].get(task_name, {}))
        if not metrics:
            raise LmEvalTaskError(f"lm-eval task {task_name!r} reported no metric")
        main_key = next(iter(metrics))
        if ours:
            runs.append(_mirrorlab_run(task_name, logged, tokenizer, generation, metrics))
        else:
            config = results["configs"].get(task_name, {})
            runs.append(_builtin_run(task_name, logged, tokenizer, generation, metrics, main_key, config))
    return runs


def _mirrorlab_run(task_name: str, logged: list[dict], tokenizer, generation: GenerationSettings,
                   metrics: dict) -> _TaskRun:
    """Mirrorlab task: a row per sampled response, judged again as process_results did (the verifier caches)."""
    from evaluation.lm_eval_tasks.utils import judge_responses

    answer_kind = TASKS[task_name].answer_kind
    problems, values = [], []
    for example in sorted(logged, key=lambda example: example["doc_id"]):
        doc, responses = example["doc"], example["resps"][0]
        rows = []
        for index, (response, judgement) in enumerate(
                zip(responses, judge_responses(responses, doc["answer"], answer_kind), strict=True)):
            tokens = _token_count(response, tokenizer, generation.max_tokens)
            rows.append(SampleOutcome(
                problem_id=doc["problem_id"], sample_index=index, response=response, response_tokens=tokens,
                truncated=tokens >= generation.max_tokens, correct=judgement.correct,
                extracted_answer=judgement.extracted, reference_answer=str(doc["answer"]), detail=judgement.detail))
        problems.append(rows)
        values.append(example["pass@1"])
    return _TaskRun(task_name, problems, values, "pass@1", {key.split(",")[0]: value for key, value in metrics.items()})


def _builtin_run(task_name: str, logged: list[dict], tokenizer, generation: GenerationSettings, metrics: dict,
                 main_key: str, config: dict) -> _TaskRun:
    """Any other task: a row per problem, judged by the task's main metric."""
    metric, filter_name = main_key.split(",", 1)
    output_type = config.get("output_type", "generate_until")
    problems, values = [], []
    for example in sorted((e for e in logged if e["filter"] == filter_name), key=lambda e: e["doc_id"]):
        value = example.get(metric)
        number = _as_number(value)
        response, extracted, tokens, truncated = _builtin_response(example, output_type, tokenizer, generation)
        detail = f"{metric}={number:g}" if number is not None else f"{metric}={value!r}"
        if output_type == "generate_until" and len(example["resps"][0]) > 1:
            detail += f"; the task scored its {len(example['resps'][0])} samples as one answer"
        problems.append([SampleOutcome(
            problem_id=str(example["doc_id"]), sample_index=0, response=response, response_tokens=tokens,
            truncated=truncated, correct=number == 1.0, extracted_answer=extracted,
            reference_answer=_reference_answer(example, output_type), detail=detail)])
        values.append(number)
    return _TaskRun(task_name, problems, values, main_key, metrics)


def _builtin_response(example: dict, output_type: str, tokenizer,
                      generation: GenerationSettings) -> tuple[str, str, int, bool]:
    """(response, extracted answer, tokens, truncated) of one logged problem of a built-in task."""
    if output_type == "generate_until":
        response = example["resps"][0][0]
        filtered = example["filtered_resps"][0]
        tokens = _token_count(response, tokenizer, generation.max_tokens)
        return response, filtered if isinstance(filtered, str) else str(filtered), tokens, \
            tokens >= generation.max_tokens
    if output_type == "multiple_choice":
        # filtered_resps: one (log-likelihood, is_greedy) per option; arguments[i] = (context, " option")
        scores = [float(response[0]) for response in example["filtered_resps"]]
        best = max(range(len(scores)), key=scores.__getitem__)
        option = _option_text(example, best)
        return option, option, 0, False
    return "", "", 0, False  # loglikelihood(_rolling): no response text


REFERENCE_CHARS = 2000  # a code task's target is its test code: kept short on every sample row


def _reference_answer(example: dict, output_type: str) -> str:
    """The logged target of a built-in task's problem: its text (at most REFERENCE_CHARS), or a multiple-choice
    task's option text."""
    target = example.get("target")
    if target is None:
        return ""
    if output_type == "multiple_choice" and isinstance(target, int):
        try:
            return _option_text(example, target)
        except (KeyError, IndexError, TypeError):  # arguments logged in another shape: the option's number
            return str(target)
    return str(target)[:REFERENCE_CHARS]


def _option_text(example: dict, index: int) -> str:
    """The text of multiple-choice option `index`, from the logged request arguments."""
    arguments = example["arguments"]
    request = arguments[f"gen_args_{index}"] if isinstance(arguments, dict) else arguments[index]
    continuation = request["arg_1"] if isinstance(request, dict) else request[1]
    return str(continuation).strip()


# ----------------------------------------------------------------------------- the score

def _outcome(settings: BenchmarkSettings, name: str, results: dict, runs: list[_TaskRun], ours: bool,
             run_metadata: dict) -> BenchmarkOutcome:
    """The BenchmarkOutcome of all leaf tasks; problem ids are prefixed by the task when there are several."""
    import lm_eval

    several = len(runs) > 1
    counts_wrong = ours and settings.truncated_counts_wrong  # lm-eval's own tasks are scored as lm-eval scores them
    problems = []
    for run in runs:
        for rows in run.problems:
            rows = [truncation_applied(row, counts_wrong) for row in rows]
            problems.append([_prefixed(row, run.name) for row in rows] if several else rows)
    samples = [row for rows in problems for row in rows]
    if not samples:
        raise LmEvalTaskError(f"lm-eval task {name!r} produced no samples (limit={settings.limit})")
    if ours:
        score = score_benchmark([[row.correct for row in rows] for rows in problems],
                                [[row.response_tokens for row in rows] for rows in problems],
                                [[votes(row, counts_wrong) for row in rows] for rows in problems],
                                same_answer=same_value, value_key=value_key)
        main_metric, scale = "pass@1", {SCORE_SCALE: FRACTION, HIGHER_IS_BETTER: True}
    else:
        score, main_metric = _builtin_score(name, results, runs, problems)
        scale = _score_scale(score, runs, results.get("higher_is_better", {}).get(name, {}), main_metric)
    metadata = {"runner": "lm-eval", "lm_eval_version": lm_eval.__version__, "lm_eval_task": name,
                "lm_eval_subtasks": [run.name for run in runs], "main_metric": main_metric, **scale,
                "lm_eval_metrics": {run.name: run.metrics for run in runs} if several else runs[0].metrics,
                **run_metadata, **truncation_metadata(samples, counts_wrong)}
    return BenchmarkOutcome(benchmark=settings.benchmark, score=score, samples=samples, metadata=metadata)


def _score_scale(score: BenchmarkScore, runs: list[_TaskRun], higher_is_better: dict, main_metric: str) -> dict:
    """How to read a built-in task's score: a 0-1 fraction (accuracy, exact match: shown as a percent) only when
    the metric is none of lm-eval's known raw ones (RAW_METRIC) and it and every problem's value lie in
    [0, 1]; else raw (BLEU's 0-100, a perplexity above 1, a corpus metric with no per-problem values), shown as
    it is. The name decides first, so one metric reads the same in every evaluation (a low BLEU whose values all
    fall under 1 is still BLEU). lm-eval's higher_is_better gives the direction (a lower perplexity is better)."""
    metric = main_metric.split(",", 1)[0]
    values = [value for run in runs for value in run.problem_values]
    fraction = not RAW_METRIC.fullmatch(metric) and bool(values) \
        and all(value is not None and 0.0 <= value <= 1.0 for value in values) and 0.0 <= score.score <= 1.0
    return {SCORE_SCALE: FRACTION if fraction else RAW,
            HIGHER_IS_BETTER: higher_is_better.get(metric) is not False}


def _prefixed(row: SampleOutcome, task_name: str) -> SampleOutcome:
    from dataclasses import replace

    return replace(row, problem_id=f"{task_name}/{row.problem_id}")


def _builtin_score(name: str, results: dict, runs: list[_TaskRun],
                   problems: list[list[SampleOutcome]]) -> tuple[BenchmarkScore, str]:
    """lm-eval's value of the main metric (the group's when it aggregates, else the mean over problems)."""
    main_metric = runs[0].main_metric
    values = [value for run in runs for value in run.problem_values]
    group_value = _as_number(results["results"].get(name, {}).get(main_metric)) if len(runs) > 1 else None
    numbers = [value for value in values if value is not None]
    if len(runs) == 1:
        score = _as_number(runs[0].metrics[main_metric])
    else:
        score = group_value if group_value is not None else (sum(numbers) / len(numbers) if numbers else None)
    if score is None:
        raise LmEvalTaskError(f"lm-eval task {name!r}: main metric {main_metric} is not a number")
    # an interval only where the score is the mean of per-problem values (not a corpus metric such as BLEU)
    ci_low, ci_high = (bootstrap_ci(numbers) if numbers and len(numbers) == len(values)
                       and abs(sum(numbers) / len(numbers) - score) < 1e-9 else (None, None))
    lengths = [row.response_tokens for rows in problems for row in rows]
    metrics = {key: value for run in runs for key, value in run.metrics.items()} if len(runs) == 1 else \
        {f"{run.name}/{key}": value for run in runs for key, value in run.metrics.items()}
    return BenchmarkScore(score=score, ci_low=ci_low, ci_high=ci_high,
                          mean_response_tokens=sum(lengths) / len(lengths), num_problems=len(problems),
                          samples_per_problem=1, metrics=metrics), main_metric
