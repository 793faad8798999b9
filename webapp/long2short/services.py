"""Launching long2short variants, and the checks of their settings shared by the API and the launch form."""

from __future__ import annotations

from functools import partial
from typing import Any, Mapping

from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import id_list, merge_sources_error
from webapp.runs.models import Checkpoint, RLRun
from webapp.celery import enqueue_job


def variant_parameter_errors(project, method: str, parameters: Mapping[str, Any],
                             descends_from: RLRun | None = None) -> dict[str, str]:
    """A method's settings that pass every knob's check but can never run (knob -> why); `descends_from`: the
    run whose iterations `other_run_iterations` names, when known (parents.source_run)."""
    if method != "merge":
        return {}
    checkpoint_ids = parameters.get("other_checkpoint_ids")
    if error := merge_sources_error(checkpoint_ids, parameters.get("other_run_iterations")):
        return {"other_checkpoint_ids": error}
    try:
        ids = id_list(checkpoint_ids, "other_checkpoint_ids")
    except ValueError as error:
        return {"other_checkpoint_ids": str(error)}
    found = {checkpoint.pk: checkpoint for checkpoint in Checkpoint.objects.filter(project=project, pk__in=ids)}
    if missing := [pk for pk in ids if pk not in found]:
        return {"other_checkpoint_ids": f"Checkpoint {missing[0]} is not in this project."}
    if removed := next((error for pk in ids if (error := found[pk].files_removed_error())), None):
        return {"other_checkpoint_ids": removed}
    if descends_from is not None and (removed := removed_run_checkpoint_error(
            descends_from, parameters.get("other_run_iterations"))):
        return {"other_run_iterations": removed}
    return {}


def removed_run_checkpoint_error(run: RLRun, iterations_text: str | None) -> str | None:
    """Why `other_run_iterations` names a checkpoint of the run whose files were removed, or None (a malformed
    list is refused when the variant runs)."""
    try:
        iterations = id_list(iterations_text, "other_run_iterations")
    except ValueError:
        return None
    removed = run.checkpoints.filter(iteration__in=iterations, files_removed_at__isnull=False).order_by("iteration")
    return removed[0].files_removed_error() if removed else None


def launch_variant(**fields) -> Long2ShortVariant:
    """Create a queued variant and send it to the gpu queue after commit (a broker that is down leaves it queued:
    the workers' recovery sends it)."""
    return Long2ShortVariant.create_queued(partial(enqueue_job, "long2short"), **fields)
