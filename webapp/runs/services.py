"""Launching and resuming RL runs; checks shared by the API and the launch form; registered checkpoints."""

from __future__ import annotations

import os
from functools import partial
from typing import Any, Mapping

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.path_rules import PathRefused
from training.context_window import launch_context_errors
from training.types import images_refusal
from webapp.jobs import JobStatus
from webapp.path_policy import checked_checkpoint_path
from webapp.runs.models import RESUMABLE_STATUSES, RLRun
from webapp.celery import enqueue_job


def run_launch_errors(prompt_set, evaluation_suite, config: Mapping[str, Any]) -> dict[str, str]:
    """Settings that pass every knob's check but can never run (field -> why); the API and the form share it."""
    errors = {}
    if not prompt_set.prompts.exists():
        errors["prompt_set"] = (f"prompt set '{prompt_set.name}' has no prompts: upload prompts to it (or choose "
                                "another set) before launching a run")
    with_images = prompt_set.prompts.exclude(image="").order_by("position")
    if "prompt_set" not in errors and with_images.exists():
        errors["prompt_set"] = f"prompt set '{prompt_set.name}': " + images_refusal(
            with_images.count(), f"#{with_images.first().position}")
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
    """Create a queued run from a validated config and send it to the gpu queue after commit (a broker that is
    down leaves it queued: the workers' recovery sends it)."""
    config = fields["config"]
    return RLRun.create_queued(partial(enqueue_job, "rl_run"), total_iterations=config["iterations"], **fields)


def resume_run(run: RLRun, user) -> bool:
    """Re-queue a failed or cancelled run (its worker resumes from the newest checkpoint); False otherwise.

    The conditional UPDATE makes two clicks queue it once; the earlier error stays in the log. The count of its
    lost workers starts again at 0: the user deliberately tries again.
    """
    with transaction.atomic():
        resumed = RLRun.objects.filter(pk=run.pk, status__in=RESUMABLE_STATUSES).update(
            status=JobStatus.QUEUED, cancel_requested=False, error="", traceback="", finished_at=None,
            heartbeat_at=None, worker="", unsent_since=timezone.now(), lost_workers=0)
        if resumed:
            earlier = f" (was {run.status}{': ' + run.error if run.error else ''})"
            RLRun.append_log(run.pk, f"resumed by {user}{earlier}")
            RLRun.send_after_commit(run.pk, partial(enqueue_job, "rl_run"))
    run.refresh_from_db()
    return resumed == 1


MAX_CHECKPOINT_ENTRIES = 10_000  # files and folders a registered checkpoint directory may hold (its size is summed)


def registered_checkpoint(project_id: int, path: str) -> tuple[str, int]:
    """(resolved directory, its size in bytes) of a checkpoint registered by path; PathRefused says why not.

    The path rule comes first (webapp.path_policy), so a refused path is never looked at and its refusal says
    nothing of what exists; an allowed one must be a directory the web server sees, so a typo is caught now
    rather than on a worker, and its size is summed over at most MAX_CHECKPOINT_ENTRIES entries.
    """
    resolved = checked_checkpoint_path(project_id, path)
    if not os.path.isdir(resolved):
        raise PathRefused("path", f"no directory '{path}' on the web server: register checkpoints on storage it "
                                  f"shares with the workers; to evaluate a model only the workers can read, create "
                                  f"an evaluation with \"model\": \"{path}\" instead")
    size = directory_size(resolved, MAX_CHECKPOINT_ENTRIES)
    if size is None:
        raise PathRefused("path", f"'{path}' holds more than {MAX_CHECKPOINT_ENTRIES} files and folders: register "
                                  f"one checkpoint's directory (its weights, config and tokenizer)")
    return resolved, size


def directory_size(path: str, max_entries: int) -> int | None:
    """Bytes of the files under a directory (symlinked folders are not entered); None past max_entries entries."""
    total, seen, pending = 0, 0, [path]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    seen += 1
                    if seen > max_entries:
                        return None
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_file():
                        total += entry.stat().st_size
        except OSError as error:
            raise PathRefused("path", f"cannot read '{path}' on the web server: {error.strerror}") from None
    return total
