"""Our runner for the built-in benchmarks: batched generation, grading, scoring."""

from __future__ import annotations

from typing import Callable, Sequence

from evaluation.benchmarks import BUILTIN_BENCHMARKS, BenchmarkSpec
from evaluation.benchmarks.judging import AnswerJudge, Pairs
from evaluation.context import EvalContext
from evaluation.datasets import BenchmarkProblem, require_images
from training.generation import GeneratedResponse
from grading.cot_judge import (
    JUDGE, RULE, VERIFIER_TIMED_OUT, Grade, JudgeItem, JudgeVerdict, RuleVerdict, grade, grader_mode_uses_judge,
)
from evaluation.outcome import (
    BenchmarkOutcome, SampleOutcome, truncation_applied, truncation_metadata, votes,
)
from evaluation.scoring import score_benchmark
from grading.verifier.equivalence import same_value
from grading.verifier.fast_compare import value_key
from evaluation.suite_config import BenchmarkSettings
from training.prompting import prompt_ids, vision_prompt_ids
from training.rollout.seeds import text_key

# The rules of the judges of an extracted final answer, by judge name: (pairs, context, extraction policy) ->
# RuleVerdicts. Their benchmarks take a grader mode, so the CoT judge model can grade them too
# (evaluation.benchmarks.ANSWER_JUDGES); each benchmark's judge is named in its module.
ANSWER_RULES: dict[str, Callable[[Pairs, EvalContext, str], list[RuleVerdict]]] = {
    spec.judge.name: spec.judge.rule for spec in BUILTIN_BENCHMARKS.values() if isinstance(spec.judge, AnswerJudge)}
JUDGE_ERROR = "error"  # SampleOutcome.judge_verdict of a judge output whose verdict did not parse


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


def cut_at_stop(response: GeneratedResponse, stops: Sequence[str], tokenizer) -> GeneratedResponse:
    """A plain-template response cut at the first stop sequence before any code fence (a fenced reply carries
    its own end, and its code may hold "\\ndef"), finished, its tokens those of the text kept; unchanged when it
    holds none."""
    fence = response.text.find("```")
    searched = response.text if fence < 0 else response.text[:fence]
    ends = [index for index in (searched.find(stop) for stop in stops) if index >= 0]
    if not ends:
        return response
    text = response.text[:min(ends)]
    return GeneratedResponse(text=text, tokens=len(tokenizer(text, add_special_tokens=False).input_ids),
                             truncated=False)


def problem_stream_key(benchmark: str, problem: BenchmarkProblem) -> tuple[int, int]:
    """What a problem's samples draw their random streams from, beside the evaluation's seed: the benchmark and
    the problem id, so a sample is the same whatever batch it falls in, and no two problems (of one benchmark
    or two) share streams."""
    return text_key(benchmark), text_key(problem.problem_id)


def problem_images(spec: BenchmarkSpec, problems: Sequence[BenchmarkProblem]) -> dict:
    """generate()'s images argument for an image benchmark (each problem's image file); none otherwise."""
    return {"images": [(problem.image,) for problem in problems]} if spec.needs_images else {}


def grade_pairs(spec: BenchmarkSpec, settings: BenchmarkSettings, pairs: Pairs, context: EvalContext) -> list[Grade]:
    """Grade (problem, response) pairs under the benchmark's grader mode and extraction policy, in order."""
    judge = spec.judge
    if not isinstance(judge, AnswerJudge):  # a program run on tests, MathVista's options: rule only
        return [Grade(judgement.correct, RULE, rule=RuleVerdict(judgement.correct, True, judgement.extracted,
                                                                judgement.detail))
                for judgement in judge.judge(pairs, context)]
    items = [JudgeItem(spec.question(problem), problem.answer, response) for problem, response in pairs]
    problem_of = {id(item): problem for item, (problem, _) in zip(items, pairs)}

    def rule(chosen: Sequence[JudgeItem]) -> list[RuleVerdict]:
        chosen_pairs = [(problem_of[id(item)], item.response) for item in chosen]
        return judge.rule(chosen_pairs, context, settings.extraction_policy)

    cot_judge = (context.cot_judge(settings.judge_model, settings.judge_max_tokens)
                 if grader_mode_uses_judge(settings.grader_mode) else None)
    return grade(items, settings.grader_mode, rule, cot_judge)


def judge_batch(spec: BenchmarkSpec, settings: BenchmarkSettings, problems: Sequence[BenchmarkProblem],
                responses: Sequence[Sequence[GeneratedResponse]], context: EvalContext) -> list[list[SampleOutcome]]:
    """Grade every response of a batch of problems; one list of samples per problem."""
    pairs = [(problem, response.text) for problem, samples in zip(problems, responses) for response in samples]
    grades = iter(grade_pairs(spec, settings, pairs, context))
    policy = settings.extraction_policy if spec.grades_final_answers else ""
    return [[truncation_applied(sample_outcome(problem, index, response, next(grades), policy),
                                settings.truncated_counts_wrong)
             for index, response in enumerate(samples)]
            for problem, samples in zip(problems, responses)]


def judge_verdict_text(verdict: JudgeVerdict | None) -> str:
    """"correct", "incorrect", "error" (the output did not parse) or "" (the judge was not asked)."""
    if verdict is None:
        return ""
    return JUDGE_ERROR if verdict.is_error else verdict.verdict


def sample_outcome(problem: BenchmarkProblem, index: int, response: GeneratedResponse, graded: Grade,
                   extraction_policy: str) -> SampleOutcome:
    """extraction_policy is recorded where the rule extracted an answer under it."""
    rule, judge = graded.rule, graded.judge
    detail = judge.error if judge is not None and judge.is_error else (rule.detail if rule is not None else "")
    return SampleOutcome(problem_id=problem.problem_id, sample_index=index, response=response.text,
                         response_tokens=response.tokens, truncated=response.truncated, correct=graded.correct,
                         extracted_answer=rule.extracted if rule is not None else "",
                         reference_answer=problem.answer, detail=detail,
                         extraction_policy=extraction_policy if rule is not None else "", graded_by=graded.graded_by,
                         judge_verdict=judge_verdict_text(judge), judge_reasoning=judge.reasoning if judge else "")


def grading_metadata(spec: BenchmarkSpec, settings: BenchmarkSettings, samples: Sequence[SampleOutcome]) -> dict:
    """How the benchmark was graded, for its result: the extraction policy and grader mode of answer benchmarks,
    and the checks the verifier did not finish in time (graded wrong) where there were any; with a judge, the judge
    model, the samples it judged and its errors (outputs with no valid verdict)."""
    if not spec.grades_final_answers:
        return {}
    metadata = {"extraction_policy": settings.extraction_policy, "grader_mode": settings.grader_mode}
    timeouts = sum(sample.detail == VERIFIER_TIMED_OUT for sample in samples)
    if timeouts:
        metadata["verifier_timeouts"] = timeouts
    if grader_mode_uses_judge(settings.grader_mode):
        verdicts = [sample.judge_verdict for sample in samples if sample.judge_verdict]
        metadata |= {"judge_model": settings.judge_model, "judged_samples": len(verdicts),
                     "judge_errors": verdicts.count(JUDGE_ERROR)}
    return metadata


def votes_on_answers(spec: BenchmarkSpec, settings: BenchmarkSettings) -> bool:
    """Whether maj@n means something: final answers the rule or the benchmark's own judge extracts (a program has
    no answer to vote on, and the judge model alone extracts none)."""
    return spec.has_final_answers and settings.grader_mode != JUDGE


def outcome_from_samples(benchmark: str, per_problem: Sequence[Sequence[SampleOutcome]], metadata: dict,
                         votes_cast: bool = True, truncated_counts_wrong: bool = True) -> BenchmarkOutcome:
    """Score (problems x samples) outcomes: Pass@1 averaged with its CI, pass@k, lengths, and maj@n when
    `votes_cast` (the samples' extracted answers vote, finished ones only under truncated_counts_wrong; wrong
    answers of one value in one class)."""
    score = score_benchmark(
        correct=[[sample.correct for sample in samples] for samples in per_problem],
        lengths=[[sample.response_tokens for sample in samples] for samples in per_problem],
        answers=[[votes(sample, truncated_counts_wrong) for sample in samples] for samples in per_problem]
        if votes_cast else None,
        same_answer=same_value, value_key=value_key,
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
                                       temperature=settings.temperature, top_p=settings.top_p, seed=context.seed,
                                       stream_keys=[problem_stream_key(settings.benchmark, problem)
                                                    for problem in batch],
                                       **problem_images(spec, batch))
        if not getattr(generator.tokenizer, "chat_template", None):
            responses = [[cut_at_stop(response, spec.plain_stops, generator.tokenizer) for response in samples]
                         for samples in responses]
        per_problem += judge_batch(spec, settings, batch, responses, context)
        correct = sum(sample.correct for samples in per_problem for sample in samples)
        total = sum(len(samples) for samples in per_problem)
        context.log(f"{settings.benchmark}: {len(per_problem)}/{len(problems)} problems, "
                    f"accuracy so far {correct / total:.3f}")
    metadata = {"runner": "mirrorlab", "rollout_engine": context.rollout_engine,
                "sampling": {"samples_per_problem": settings.samples_per_problem, "max_tokens": settings.max_tokens,
                             "temperature": settings.temperature, "top_p": settings.top_p, "seed": context.seed},
                **grading_metadata(spec, settings, [sample for samples in per_problem for sample in samples])}
    if settings.limit is not None:
        metadata["sampling"]["limit"] = settings.limit
    metadata |= truncation_metadata([sample for samples in per_problem for sample in samples],
                                    settings.truncated_counts_wrong)
    if spec.test_set:
        metadata["test_set"] = spec.test_set
    return outcome_from_samples(settings.benchmark, per_problem, metadata, votes_on_answers(spec, settings),
                                settings.truncated_counts_wrong)
