"""Run one long2short variant row: resolve its parent, call the method, store the checkpoint, records and evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from common.knobs import parse_config
from common.sizes import decimal_size
from training.config import LONG2SHORT_CONFIGS
from training.long2short import long2short_methods
from training.long2short.base import Long2ShortHooks, Long2ShortJob, Long2ShortOutcome, Long2ShortStopped
from webapp.evals.models import EvalRun
from webapp.evals.services import launch_evaluation
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortRecord, Long2ShortVariant, RecordKind
from webapp.long2short.parents import (
    ParentUnavailable, merge_checkpoints, pending_parent_run, resolve_parent_checkpoint, source_run,
)
from webapp.path_policy import variant_checkpoint_folder
from webapp.runs.models import Checkpoint
from workers.eval_job import storable_text
from workers.jobs import JobCancelled
from workers.path_checks import check_variant_paths
from workers.rl_job import prompt_records

RECORD_ROWS_PER_INSERT = 2000
MAX_WAIT_SECONDS = 60  # waits grow 1, 2, 4, ... seconds up to this
WAIT_LOG_EVERY = 30  # log "waiting" on the first wait, then every this many waits


# ---------------------------------------------------------------- waiting for the parent run


def parent_wait_seconds(variant_id: int, waits: int) -> int | None:
    """Seconds to wait before trying again while the queued variant's parent run is queued or running, else None."""
    variant = Long2ShortVariant.objects.filter(pk=variant_id, status=JobStatus.QUEUED, cancel_requested=False) \
        .select_related("parent_run").first()
    run = variant and pending_parent_run(variant)
    if not run:
        return None
    if waits % WAIT_LOG_EVERY == 0:
        Long2ShortVariant.append_log(variant_id, f"waiting for run '{run.name}' (#{run.pk}, {run.status}) to finish")
    return min(2 ** waits, MAX_WAIT_SECONDS)


# ---------------------------------------------------------------- building the job


def build_job(variant: Long2ShortVariant, config: Any) -> Long2ShortJob:
    """The method's input from rows: parent checkpoint, the source run's config and prompts, output folder.

    config: the method's parsed config (a merge's other checkpoints come from it).
    """
    parent, start_reason = resolve_parent_checkpoint(variant)
    run = source_run(variant)
    if run is None:
        raise ParentUnavailable(f"checkpoint #{parent.pk} descends from no run: its prompts and config are unknown")
    merged = []
    if variant.method == "merge":
        merged = merge_checkpoints(variant, config.other_checkpoint_ids, config.other_run_iterations)
    output_dir = variant_checkpoint_folder(variant.pk)
    output_dir.mkdir(parents=True, exist_ok=True)
    Long2ShortVariant.objects.filter(pk=variant.pk).update(started_from=parent, start_reason=start_reason)
    Long2ShortVariant.append_log(variant.pk, f"parent: {parent} ({parent.path}), {start_reason}; prompts of run "
                                 f"'{run.name}'"
                                 + "".join(f"; merged with {checkpoint} ({checkpoint.path})" for checkpoint in merged))
    return Long2ShortJob(
        parent_model_path=Path(parent.path), parent_config=dict(run.config), records=tuple(prompt_records(run)),
        output_dir=output_dir, models_dir=Path(settings.MODELS_DIR),
        merge_model_paths=tuple(Path(checkpoint.path) for checkpoint in merged),
    )


def variant_hooks(variant: Long2ShortVariant) -> Long2ShortHooks:
    """Log lines and progress go to the row (each one a heartbeat); a cancel request stops the method. Each hook
    raises JobTakenOver once this worker lost the variant, so the method stops before its next step (the save
    of its checkpoint included)."""

    def progress(fraction: float) -> None:
        Long2ShortVariant.update_held(variant.pk, variant.worker, progress=min(max(float(fraction), 0.0), 1.0))

    return Long2ShortHooks(
        log=lambda line: Long2ShortVariant.log_alive(variant.pk, line, variant.worker), progress=progress,
        should_stop=variant.should_stop)


# ---------------------------------------------------------------- storing the outcome


def record_rows(variant: Long2ShortVariant, outcome: Long2ShortOutcome, problems: dict[str, str]) -> list:
    """Unsaved record rows of the outcome's kept samples and pairs, with text made storable."""
    kept = [
        Long2ShortRecord(variant=variant, kind=RecordKind.KEPT_SAMPLE, prompt_id=sample.prompt_id,
                         problem=storable_text(problems.get(sample.prompt_id, "")),
                         chosen=storable_text(sample.response), chosen_tokens=sample.response_tokens,
                         extra={"samples_drawn": sample.samples_drawn, "correct_samples": sample.correct_samples})
        for sample in outcome.kept_samples
    ]
    pairs = [
        Long2ShortRecord(variant=variant, kind=RecordKind.PAIR, prompt_id=pair.prompt_id,
                         problem=storable_text(problems.get(pair.prompt_id, "")),
                         chosen=storable_text(pair.chosen), chosen_tokens=pair.chosen_tokens,
                         rejected=storable_text(pair.rejected), rejected_tokens=pair.rejected_tokens,
                         rejected_reason=pair.rejected_reason)
        for pair in outcome.pairs
    ]
    return kept + pairs


def evaluation_suite_id(variant: Long2ShortVariant) -> int | None:
    """The variant's suite, else its source run's."""
    if variant.evaluation_suite_id:
        return variant.evaluation_suite_id
    run = source_run(variant)
    return run.evaluation_suite_id if run else None


def queue_evaluation(variant: Long2ShortVariant, checkpoint: Checkpoint, parent_config: dict) -> EvalRun | None:
    """An evaluation of the variant's checkpoint on its suite, unless one is already there (a re-run)."""
    suite_id = evaluation_suite_id(variant)
    if suite_id is None:
        return None
    existing = EvalRun.objects.filter(checkpoint=checkpoint, suite_id=suite_id).first()
    return existing or launch_evaluation(
        project_id=variant.project_id, suite_id=suite_id, checkpoint=checkpoint, owner_id=variant.owner_id,
        rollout_engine=parent_config.get("rollout_engine", "torch"), seed=parent_config.get("seed", 0))


def store_outcome(variant: Long2ShortVariant, job: Long2ShortJob, outcome: Long2ShortOutcome) -> None:
    """Records, the Checkpoint row, the queued evaluation and their log lines, all or nothing (a re-run replaces
    them), while this worker holds the variant (JobTakenOver otherwise)."""
    problems = {record.prompt_id: record.problem for record in job.records}
    with variant.holding_claim():
        Long2ShortRecord.objects.filter(variant=variant).delete()
        Long2ShortRecord.objects.bulk_create(record_rows(variant, outcome, problems),
                                             batch_size=RECORD_ROWS_PER_INSERT)
        checkpoint, _ = Checkpoint.objects.update_or_create(
            project_id=variant.project_id, variant=variant,
            defaults={"path": str(outcome.checkpoint_path), "size_bytes": outcome.size_bytes,
                      "iteration": outcome.iteration})
        evaluation = queue_evaluation(variant, checkpoint, job.parent_config)
        Long2ShortVariant.append_log(variant.pk, f"checkpoint saved: {outcome.checkpoint_path} "
                                     f"({decimal_size(outcome.size_bytes)}); {len(outcome.kept_samples)} kept "
                                     f"samples, {len(outcome.pairs)} pairs")
        if evaluation is None:
            Long2ShortVariant.append_log(variant.pk, "no evaluation suite (variant or parent run): not evaluated")
        else:
            Long2ShortVariant.append_log(variant.pk, f"queued evaluation #{evaluation.pk} on suite "
                                         f"#{evaluation.suite_id}")


def metrics_line(metrics: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.4g}" for name, value in sorted(metrics.items()))


# ---------------------------------------------------------------- the job


def run_long2short_job(variant: Long2ShortVariant) -> None:
    """Apply the variant's method to its parent; raise JobCancelled when it stopped on request."""
    check_variant_paths(variant)  # the path rule again: a queued job whose path is no longer allowed fails here
    config = parse_config(LONG2SHORT_CONFIGS[variant.method], variant.parameters)
    method = long2short_methods.get(variant.method)
    job = build_job(variant, config)
    Long2ShortVariant.append_log(variant.pk, f"{variant.method}: {len(job.records)} prompts -> {job.output_dir}")
    try:
        outcome = method(config, job, variant_hooks(variant))
    except Long2ShortStopped:
        raise JobCancelled() from None
    if outcome.metrics:
        Long2ShortVariant.log_alive(variant.pk, f"metrics: {metrics_line(outcome.metrics)}", variant.worker)
    store_outcome(variant, job, outcome)

