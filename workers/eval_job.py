"""Run one evaluation row: every benchmark of its suite through its runner, results stored per benchmark."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from evaluation.context import EvalContext, EvaluationStopped
from evaluation.outcome import BenchmarkOutcome
from evaluation.runners import runner_for
from evaluation.suite_config import parse_suite
from training.models.loading import resolve_model_path
from webapp.evals.models import BenchmarkResult, EvalRun, SampleResult
from workers.jobs import JobCancelled
from workers.path_checks import check_evaluation_paths

SAMPLE_ROWS_PER_INSERT = 2000


def storable_text(text: str) -> str:
    """Model output as a Postgres text value: NUL characters (which Postgres refuses) become U+FFFD."""
    return text.replace("\x00", "\ufffd")


def model_path(eval_run: EvalRun) -> str:
    """The checkpoint's directory, else the model name resolved (the tiny preset is created on first use)."""
    if eval_run.checkpoint_id:
        return eval_run.checkpoint.path
    return resolve_model_path(eval_run.model, Path(settings.MODELS_DIR))


def store_outcome(eval_run: EvalRun, outcome: BenchmarkOutcome, progress: float) -> None:
    """One benchmark's result row and sample rows and the evaluation's progress, all or nothing (a re-run replaces
    them), while this worker holds the evaluation (JobTakenOver otherwise)."""
    score = outcome.score
    with eval_run.holding_claim():
        SampleResult.objects.filter(eval_run=eval_run, benchmark=outcome.benchmark).delete()
        SampleResult.objects.bulk_create(
            (SampleResult(eval_run=eval_run, benchmark=outcome.benchmark, problem_id=sample.problem_id,
                          sample_index=sample.sample_index, response=storable_text(sample.response),
                          response_tokens=sample.response_tokens, correct=sample.correct,
                          truncated=sample.truncated,
                          extracted_answer=storable_text(sample.extracted_answer),
                          reference_answer=storable_text(sample.reference_answer),
                          detail=storable_text(sample.detail), extraction_policy=sample.extraction_policy,
                          graded_by=sample.graded_by, judge_verdict=sample.judge_verdict,
                          judge_reasoning=storable_text(sample.judge_reasoning))
             for sample in outcome.samples),
            batch_size=SAMPLE_ROWS_PER_INSERT,
        )
        BenchmarkResult.objects.update_or_create(
            eval_run=eval_run, benchmark=outcome.benchmark,
            defaults={"score": score.score, "ci_low": score.ci_low, "ci_high": score.ci_high,
                      "mean_response_tokens": score.mean_response_tokens, "num_problems": score.num_problems,
                      "samples_per_problem": score.samples_per_problem, "metrics": outcome.metrics()},
        )
        EvalRun.objects.filter(pk=eval_run.pk).update(progress=progress)


def run_eval_job(eval_run: EvalRun) -> None:
    """Evaluate each benchmark not yet stored (a re-queued run resumes after its last finished benchmark)."""
    check_evaluation_paths(eval_run)  # the path rule again: a queued job whose path is no longer allowed fails here
    benchmarks = parse_suite(eval_run.suite.benchmarks)
    runners = [(entry, runner_for(entry.benchmark)) for entry in benchmarks]  # unknown names fail before loading
    done = set(BenchmarkResult.objects.filter(eval_run=eval_run).values_list("benchmark", flat=True))
    context = EvalContext(
        model_path(eval_run), Path(settings.DATASETS_DIR), rollout_engine=eval_run.rollout_engine,
        seed=eval_run.seed, log=lambda line: EvalRun.log_alive(eval_run.pk, line, eval_run.worker),
        should_stop=eval_run.should_stop,
        sandbox_backend=settings.SANDBOX_BACKEND, fetch_missing=settings.FETCH_MISSING_BENCHMARKS,
        resolve_model=lambda name: resolve_model_path(name, Path(settings.MODELS_DIR)),
    )
    try:
        for position, (entry, runner) in enumerate(runners):
            if entry.benchmark in done:
                context.log(f"{entry.benchmark}: already stored, skipped")
                continue
            context.log(f"evaluating {entry.benchmark}")
            outcome = runner(entry, context)
            store_outcome(eval_run, outcome, progress=(position + 1) / len(runners))
            context.log(f"{entry.benchmark}: {outcome.score.summary()}")
    except EvaluationStopped:
        raise JobCancelled() from None
    finally:
        context.close()
