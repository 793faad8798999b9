"""Benchmark suite configs: an ordered list of benchmarks, each with its settings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from common.knobs import ConfigError, knob, parse_config
from evaluation.benchmarks import BUILTIN_BENCHMARKS, grades_final_answers
from grading.cot_judge import GRADER_MODE_NAMES, RULE, grader_mode_uses_judge
from grading.verifier import EXTRACTION_POLICIES, FLEXIBLE
from training.config.limits import MAX_SAMPLES_PER_PROBLEM, MAX_TEMPERATURE, MAX_TOKENS

# Built-in benchmarks, in their registry's order; any lm-evaluation-harness task is named "lm-eval:<task>".
BENCHMARKS: tuple[str, ...] = tuple(BUILTIN_BENCHMARKS)
LM_EVAL_PREFIX = "lm-eval:"
_LM_EVAL_TASK_NAME = re.compile(r"[A-Za-z0-9][\w.\-]*")  # lm-eval's task and group names ("gsm8k", "mmlu_pro")
MAX_SUITE_BENCHMARKS = 100
MAX_PROBLEMS = 1_000_000


# The grading knobs, shared by a suite's benchmarks and by a grader audit's second grader (AuditGrader).
def extraction_policy_knob():
    return knob(FLEXIBLE, "How the final answer is found in a response: flexible (the last \\boxed{}, else the "
                          "last 'answer:' line) or boxed (the last \\boxed{} only). Math benchmarks only.",
                group="grading", choices=EXTRACTION_POLICIES)


def grader_mode_knob():
    return knob(RULE, "Who decides correctness: rule (the verifier), judge (the chain-of-thought judge model), or "
                      "rule_then_judge (the judge decides only what the rule cannot). Math benchmarks only.",
                group="grading", choices=GRADER_MODE_NAMES)


def judge_model_knob():
    return knob(None, "The judge model of grader modes judge and rule_then_judge: a preset, a local Hugging Face "
                      "folder or a hub id (e.g. Qwen/Qwen2.5-7B-Instruct).", group="grading")


def judge_max_tokens_knob():
    return knob(1024, "Longest judge reasoning, in tokens; a verdict cut off counts as a judge error.",
                group="grading", minimum=1, maximum=MAX_TOKENS)


def grading_errors(benchmark: str, extraction_policy: str, grader_mode: str, judge_model: str | None) -> dict[str, str]:
    """The grading knobs must suit the benchmark's judge, and a judge mode needs a judge model (and only it)."""
    errors = {}
    answers = grades_final_answers(benchmark)
    if extraction_policy != FLEXIBLE and not answers:
        errors["extraction_policy"] = (f"{benchmark} is not judged on an extracted final answer, so only the "
                                       f"default {FLEXIBLE!r} applies")
    if grader_mode != RULE and not answers:
        errors["grader_mode"] = (f"{benchmark} is not judged on an extracted final answer, so the judge model "
                                 f"cannot grade it: use {RULE!r}")
    else:
        errors.update(judge_model_errors(grader_mode, judge_model))
    return errors


def judge_model_errors(grader_mode: str, judge_model: str | None) -> dict[str, str]:
    """A grader mode that asks the judge needs a judge model, and only such a mode may name one."""
    if grader_mode_uses_judge(grader_mode) and not judge_model:
        return {"judge_model": f"grader_mode {grader_mode!r} asks a judge model: name one (a preset, a local "
                               "folder or a hub id such as Qwen/Qwen2.5-7B-Instruct)"}
    if not grader_mode_uses_judge(grader_mode) and judge_model:
        return {"judge_model": f"is used only by grader modes that ask the judge; grader_mode is {RULE!r}"}
    return {}


@dataclass(frozen=True)
class BenchmarkSettings:
    """One benchmark of a suite and how it is sampled and scored."""

    benchmark: str = knob("math500", "Benchmark name, or lm-eval:<task> for any lm-evaluation-harness task.")
    samples_per_problem: int = knob(1, "Samples per problem; Pass@1 is averaged over them.", minimum=1,
                                    maximum=MAX_SAMPLES_PER_PROBLEM)
    max_tokens: int = knob(1024, "Longest response, in tokens.", minimum=1, maximum=MAX_TOKENS)
    temperature: float = knob(0.0, "Sampling temperature (0 = greedy).", minimum=0.0, maximum=MAX_TEMPERATURE)
    top_p: float = knob(1.0, "Nucleus sampling threshold.", exclusive_minimum=0.0, maximum=1.0)
    limit: int | None = knob(None, "Evaluate only the first N problems (empty = all).", minimum=1,
                             maximum=MAX_PROBLEMS)
    extraction_policy: str = extraction_policy_knob()
    grader_mode: str = grader_mode_knob()
    judge_model: str | None = judge_model_knob()
    judge_max_tokens: int = judge_max_tokens_knob()
    truncated_counts_wrong: bool = knob(
        True, "A response cut off at max_tokens counts as wrong whatever its text holds (it never finished: an "
              "answer boxed before a cut-off re-check is not its final answer); false grades the text as it is, "
              "as most harnesses do. Truncated samples are counted in the result either way.")

    def cross_field_errors(self) -> dict[str, str]:
        """The benchmark must be known (or an lm-eval task); several samples per problem need sampling."""
        errors = {}
        if not self.is_known_benchmark():
            errors["benchmark"] = (f"unknown benchmark {self.benchmark!r}; choose one of {', '.join(BENCHMARKS)} "
                                   f"or {LM_EVAL_PREFIX}<task> (a task name: letters, digits, '_', '-' and '.'; "
                                   "whether lm-eval has it is checked when the evaluation runs)")
        if self.samples_per_problem > 1 and self.temperature == 0.0:
            errors["temperature"] = (f"0 is greedy decoding, so the {self.samples_per_problem} samples per problem "
                                     "would be identical and pass@k and maj@k meaningless: set a temperature above 0 "
                                     "(for example 0.6) or samples_per_problem 1")
        if "benchmark" not in errors:
            errors.update(grading_errors(self.benchmark, self.extraction_policy, self.grader_mode, self.judge_model))
        return errors

    def is_known_benchmark(self) -> bool:
        if self.benchmark in BENCHMARKS:
            return True
        return self.benchmark.startswith(LM_EVAL_PREFIX) and \
            _LM_EVAL_TASK_NAME.fullmatch(self.benchmark[len(LM_EVAL_PREFIX):]) is not None


@dataclass(frozen=True)
class AuditGrader:
    """The second grader of a grader audit: a benchmark's grading knobs, replaced for the audit
    (two extraction policies: grader_mode rule with the other policy; rule against judge: grader_mode judge)."""

    grader_mode: str = grader_mode_knob()
    extraction_policy: str = extraction_policy_knob()
    judge_model: str | None = judge_model_knob()
    judge_max_tokens: int = judge_max_tokens_knob()

    def cross_field_errors(self) -> dict[str, str]:
        return judge_model_errors(self.grader_mode, self.judge_model)


def parse_suite(entries: Sequence[Any]) -> list[BenchmarkSettings]:
    """Validate a suite's ordered benchmark list; errors are keyed "benchmarks[i].field"."""
    if not isinstance(entries, (list, tuple)) or not entries:
        raise ConfigError({"benchmarks": "must be a non-empty list of benchmarks"})
    if len(entries) > MAX_SUITE_BENCHMARKS:
        raise ConfigError({"benchmarks": f"lists {len(entries)} benchmarks; a suite holds at most "
                                         f"{MAX_SUITE_BENCHMARKS}"})
    parsed, errors, seen = [], {}, set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            errors[f"benchmarks[{index}]"] = "must be an object with a 'benchmark' name"
            continue
        if "benchmark" not in entry:
            errors[f"benchmarks[{index}].benchmark"] = "is required"
            continue
        try:
            settings = parse_config(BenchmarkSettings, entry)
        except ConfigError as error:
            errors.update({f"benchmarks[{index}].{name}": reason for name, reason in error.errors.items()})
            continue
        if settings.benchmark in seen:
            errors[f"benchmarks[{index}].benchmark"] = f"{settings.benchmark!r} is listed twice"
        seen.add(settings.benchmark)
        parsed.append(settings)
    if errors:
        raise ConfigError(errors)
    return parsed
