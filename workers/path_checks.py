"""The path rule checked again when a job starts (webapp.path_policy): a job queued with a path the settings or
the files no longer allow fails with the reason (PathRefused) before anything is read.

Checkpoints saved by a run's or a variant's worker are the app's own; the ones registered by path, models,
judge models and dataset ids are checked against the project's rules of now.
"""

from __future__ import annotations

import os

from common.knobs import parse_config
from evaluation.datasets.prompt_import import PromptImportConfig
from webapp.evals.models import EvalRun, GraderAudit
from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import id_list, source_run
from common.path_rules import PathRefused, is_within
from webapp.path_policy import (
    checked_image,
    MODEL_KNOBS, checked_checkpoint_path, worker_checked_dataset_id, worker_checked_model,
)
from webapp.prompts.models import PromptSetImport, uploads_folder
from webapp.runs.models import Checkpoint, RLRun

def check_checkpoint(checkpoint: Checkpoint | None, field: str) -> None:
    """A checkpoint must still have its files (keep_last_checkpoints removes some of a run's); one registered by
    path must still be one its project may use."""
    if checkpoint is None:
        return
    if removed := checkpoint.files_removed_error():
        raise PathRefused(field, removed)
    if not checkpoint.written_by_worker:
        checked_checkpoint_path(checkpoint.project_id, checkpoint.path, field)


def check_config_models(project_id: int, config: dict, prefix: str = "") -> None:
    """The model and judge model of an RL config."""
    for knob in MODEL_KNOBS:
        if config.get(knob):
            worker_checked_model(project_id, config[knob], f"{prefix}{knob}")


def check_suite_judges(project_id: int, benchmarks: list) -> None:
    for index, entry in enumerate(benchmarks):
        if isinstance(entry, dict) and entry.get("judge_model"):
            worker_checked_model(project_id, entry["judge_model"], f"benchmarks[{index}].judge_model")


def check_evaluation_paths(eval_run: EvalRun) -> None:
    """The evaluated checkpoint or model, and the suite's judge models."""
    check_checkpoint(eval_run.checkpoint, "checkpoint")
    if eval_run.model:
        worker_checked_model(eval_run.project_id, eval_run.model)
    check_suite_judges(eval_run.project_id, eval_run.suite.benchmarks)


def check_audit_paths(audit: GraderAudit) -> None:
    """The audit's judge model."""
    if judge := audit.grader.get("judge_model"):
        worker_checked_model(audit.eval_run.project_id, judge, "judge_model")


def check_run_paths(run: RLRun) -> None:
    """The run's model and judge model, and its prompts' images."""
    check_config_models(run.project_id, run.config)
    for image in run.prompt_set.prompts.exclude(image="").values_list("image", flat=True).distinct():
        checked_image(image)


def check_variant_paths(variant: Long2ShortVariant) -> None:
    """The chosen parent checkpoint, the checkpoints to merge, and the source run's model and judge model."""
    check_checkpoint(variant.parent_checkpoint, "parent_checkpoint")
    merged = id_list(variant.parameters.get("other_checkpoint_ids"), "other_checkpoint_ids")
    for checkpoint in Checkpoint.objects.filter(project_id=variant.project_id, pk__in=merged):
        check_checkpoint(checkpoint, "other_checkpoint_ids")
    if (run := source_run(variant)) is not None:
        check_config_models(variant.project_id, run.config, prefix=f"run {run.pk}: ")


def check_import_paths(job: PromptSetImport) -> None:
    """The imported dataset, or the stored upload (inside the project's own uploads folder)."""
    if job.upload_file:
        own = os.path.realpath(uploads_folder(job.project_id))
        if not is_within(os.path.realpath(job.upload_file), own):
            raise PathRefused("upload_file", f"not in this project's uploads folder ({own})")
        return
    worker_checked_dataset_id(parse_config(PromptImportConfig, job.config).dataset_id)
