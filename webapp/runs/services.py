"""Launching and resuming RL runs; checks shared by the API and the launch form; registered checkpoints."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from django.conf import settings
from django.db import transaction

from training.context_window import launch_context_errors
from webapp.jobs import JobStatus
from webapp.runs.models import RESUMABLE_STATUSES, RLRun
from webapp.celery import enqueue_job


def run_launch_errors(prompt_set, evaluation_suite, config: Mapping[str, Any]) -> dict[str, str]:
    """Settings that pass every knob's check but can never run (field -> why); the API and the form share it."""
    errors = {}
    if not prompt_set.prompts.exists():
        errors["prompt_set"] = (f"prompt set '{prompt_set.name}' has no prompts: upload prompts to it (or choose "
                                "another set) before launching a run")
    if config.get("evaluate_every_iterations", 0) > 0 and evaluation_suite is None:
        errors["evaluate_every_iterations"] = ("evaluates checkpoints on the run's suite, and none is chosen: "
                                               "choose an evaluation_suite or set evaluate_every_iterations to 0")
    if "prompt_set" not in errors:
        errors.update(run_context_errors(prompt_set, config))
    return errors


def run_context_errors(prompt_set, config: Mapping[str, Any]) -> dict[str, str]:
    """Each prompt plus max_response_tokens must fit the model's context window (field -> why; no torch).

    The window and prompt lengths come from the model's files on the web server (a preset's known window, a local
    folder's config.json and tokenizer.json); what is not here (a hub id) the worker checks at run start.
    """
    def problems() -> dict[str, str]:
        return {str(position): problem for position, problem
                in prompt_set.prompts.order_by("position").values_list("position", "problem")}

    return launch_context_errors(config, problems, settings.MODELS_DIR,
                                 label=lambda position: f"#{position} of prompt set '{prompt_set.name}'")


def launch_run(**fields) -> RLRun:
    """Create a queued run from a validated config and send it to the gpu queue after commit."""
    config = fields["config"]
    run = RLRun.objects.create(total_iterations=config["iterations"], **fields)
    transaction.on_commit(lambda: enqueue_job("rl_run", run.pk))
    return run


def resume_run(run: RLRun, user) -> bool:
    """Re-queue a failed or cancelled run (its worker resumes from the newest checkpoint); False otherwise.

    The conditional UPDATE makes two clicks queue it once; the earlier error stays in the log.
    """
    with transaction.atomic():
        resumed = RLRun.objects.filter(pk=run.pk, status__in=RESUMABLE_STATUSES).update(
            status=JobStatus.QUEUED, cancel_requested=False, error="", traceback="", finished_at=None,
            heartbeat_at=None, worker="")
        if resumed:
            earlier = f" (was {run.status}{': ' + run.error if run.error else ''})"
            RLRun.append_log(run.pk, f"resumed by {user}{earlier}")
            transaction.on_commit(lambda: enqueue_job("rl_run", run.pk))
    run.refresh_from_db()
    return resumed == 1


def registered_path_error(path: str) -> str | None:
    """Why a path cannot be registered as a checkpoint (None when it can): it must be an absolute directory the
    web server sees, so a typo is caught now rather than on a worker."""
    if not os.path.isabs(path):
        return f"'{path}' is not an absolute path: give the checkpoint's directory from the root (/data/...)"
    if not Path(path).is_dir():
        return (f"no directory '{path}' on the web server: register checkpoints on storage it shares with the "
                f"workers (the data folder); to evaluate a model only the workers can read, create an evaluation "
                f"with \"model\": \"{path}\" instead")
    return None


def directory_size(path: str) -> int:
    """Bytes of the files under a directory (a checkpoint's weights, config and tokenizer)."""
    return sum(entry.stat().st_size for entry in Path(path).rglob("*") if entry.is_file())
