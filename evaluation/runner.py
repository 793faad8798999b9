"""Our runner for the built-in benchmarks: batched generation, judging, scoring."""

from __future__ import annotations

from typing import Callable, Sequence

from evaluation.benchmarks import BUILTIN_BENCHMARKS, BenchmarkSpec
from evaluation.context import EvalContext
from evaluation.datasets import BenchmarkProblem, require_images
from evaluation.generation import GeneratedResponse
from evaluation.judges.base import Judgement
from evaluation.judges.code import judge_programs
from evaluation.judges.math import judge_equivalence, judge_integer
from evaluation.judges.mathvista import judge_mathvista
from evaluation.outcome import BenchmarkOutcome, SampleOutcome
from evaluation.scoring import score_benchmark
from evaluation.suite_config import BenchmarkSettings
from training.prompting import prompt_ids, vision_prompt_ids

Pairs = Sequence[tuple[BenchmarkProblem, str]]
JUDGES: dict[str, Callable[[Pairs, EvalContext], list[Judgement]]] = {
    "equivalence": lambda pairs, context: judge_equivalence(pairs, context.verifier),
    "integer": lambda pairs, context: judge_integer(pairs),
    "code": lambda pairs, context: judge_programs(pairs, context.code_judge),
    "mathvista": lambda pairs, context: [judge_mathvista(problem, response) for problem, response in pairs],
}


class EvaluationError(Exception):
    """A benchmark cannot be evaluated as configured; the message says why."""


def benchmark_prompt(spec: BenchmarkSpec, problem: BenchmarkProblem, tokenizer) -> tuple[int, ...]:
    """The chat template with the benchmark's instruction, else the plain template (or the bare prompt);
    an image benchmark's prompt has the problem's image placeholder first."""
    if spec.needs_images:
        return vision_prompt_ids(spec.question(problem), tokenizer, spec.instruction)
    if spec.plain_prompt and not getattr(tokenizer, "chat_template", None):
        return tuple(tokenizer(problem.prompt).input_ids)
    return prompt_ids(spec.question(problem), tokenizer, spec.instruction)


def require_vision_input(benchmark: str, context: EvalContext) -> None:
    """Image benchmarks show each problem's image to the model: refuse a text-only model, naming it."""
    generator = context.generator
    if getattr(generator, "sees_images", False):
        return
    model_type = getattr(getattr(getattr(generator, "model", None), "config", None), "model_type", "unknown")
    raise EvaluationError(
        f"{benchmark} shows the model the image of every problem, but {context.model_path} (model type "
        f"{model_type!r}) is a text-only model with no vision encoder, so it cannot see images. Evaluate a "
        f"vision-language model (for example Qwen/Qwen2.5-VL-7B-Instruct, or the tiny-vl preset for a smoke "
        f"test), or leave {benchmark} out of the suite."
    )


def problem_images(spec: BenchmarkSpec, problems: Sequence[BenchmarkProblem]) -> dict:
    """generate()'s images argument for an image benchmark (each problem's image file); none otherwise."""
    return {"images": [(problem.image,) for problem in problems]} if spec.needs_images else {}


def judge_batch(spec: BenchmarkSpec, problems: Sequence[BenchmarkProblem],
                responses: Sequence[Sequence[GeneratedResponse]], context: EvalContext) -> list[list[SampleOutcome]]:
    """Judge every response of a batch of problems; one list of samples per problem."""
    pairs = [(problem, response.text) for problem, samples in zip(problems, responses) for response in samples]
    judgements = iter(JUDGES[spec.judge](pairs, context))
    return [[sample_outcome(problem, index, response, next(judgements)) for index, response in enumerate(samples)]
            for problem, samples in zip(problems, responses)]


def sample_outcome(problem: BenchmarkProblem, index: int, response: GeneratedResponse,
                   judgement: Judgement) -> SampleOutcome:
    return SampleOutcome(problem_id=problem.problem_id, sample_index=index, response=response.text,
                         response_tokens=response.tokens, truncated=response.truncated, correct=judgement.correct,
                         extracted_answer=judgement.extracted, detail=judgement.detail)


def outcome_from_samples(benchmark: str, per_problem: Sequence[Sequence[SampleOutcome]],
                         metadata: dict) -> BenchmarkOutcome:
    """Score (problems x samples) outcomes: Pass@1 averaged with its CI, pass@k, maj@n, lengths."""
    score = score_benchmark(
        correct=[[sample.correct for sample in samples] for samples in per_problem],
        lengths=[[sample.response_tokens for sample in samples] for samples in per_problem],
        answers=[[sample.extracted_answer or None for sample in samples] for samples in per_problem],
    )
    return BenchmarkOutcome(benchmark, score, [sample for samples in per_problem for sample in samples], metadata)


def run_builtin_benchmark(settings: BenchmarkSettings, context: EvalContext) -> BenchmarkOutcome:
    """Load the problems, generate samples_per_problem responses to each in batches, judge and score them."""
    spec = BUILTIN_BENCHMARKS[settings.benchmark]
    problems = spec.load(context.data_dir, settings.limit, context.fetch_missing)
    if not problems:
        raise EvaluationError(f"{settings.benchmark}: no problems loaded from {context.data_dir}")
    if spec.needs_images:
        require_images(problems)
        require_vision_input(settings.benchmark, context)
    generator = context.generator
    per_problem: list[list[SampleOutcome]] = []
    for start in range(0, len(problems), context.batch_problems):
        context.check_stop()
        batch = problems[start:start + context.batch_problems]
        responses = generator.generate([benchmark_prompt(spec, problem, generator.tokenizer) for problem in batch],
                                       n=settings.samples_per_problem, max_tokens=settings.max_tokens,
                                       temperature=settings.temperature, top_p=settings.top_p,
                                       seed=context.seed + start, **problem_images(spec, batch))
        per_problem += judge_batch(spec, batch, responses, context)
        correct = sum(sample.correct for samples in per_problem for sample in samples)
        total = sum(len(samples) for samples in per_problem)
        context.log(f"{settings.benchmark}: {len(per_problem)}/{len(problems)} problems, "
                    f"accuracy so far {correct / total:.3f}")
    metadata = {"runner": "mirrorlab", "rollout_engine": context.rollout_engine}
    if spec.test_set:
        metadata["test_set"] = spec.test_set
    return outcome_from_samples(settings.benchmark, per_problem, metadata)
