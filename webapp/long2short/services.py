"""Launching long2short variants, and the checks of their settings shared by the API and the launch form."""

from __future__ import annotations

from functools import partial
from typing import Any, Mapping

from django.db import transaction

from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import (
    id_list, merge_ids, merge_sources_error, parents_source_run, removed_run_checkpoint_error,
)
from webapp.runs.models import Checkpoint, RLRun
from webapp.runs.retention import refuse_removed_checkpoints
from webapp.celery import enqueue_job

MERGE_CHOICES = ("other_checkpoint_ids", "other_run_iterations")  # a merge's knobs that choose checkpoints


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
            descends_from, merge_ids(parameters, "other_run_iterations"))):
        return {"other_run_iterations": removed}
    return {}


def chosen_checkpoints(fields: Mapping[str, Any]) -> dict[str, list[Checkpoint]]:
    """The checkpoints a new variant chooses, by field: its parent checkpoint and, for a merge, those of
    `other_checkpoint_ids` and the source run's at `other_run_iterations`."""
    parent = fields.get("parent_checkpoint")
    chosen = {"parent_checkpoint": [parent] if parent is not None else []}
    parameters = fields.get("parameters") or {}
    if fields.get("method") != "merge":
        return chosen
    chosen["other_checkpoint_ids"] = list(Checkpoint.objects.filter(
        pk__in=merge_ids(parameters, "other_checkpoint_ids")).order_by("pk"))
    run = parents_source_run(fields.get("parent_run"), parent)
    iterations = merge_ids(parameters, "other_run_iterations")
    chosen["other_run_iterations"] = list(run.checkpoints.filter(iteration__in=iterations).order_by("iteration")) \
        if run is not None and iterations else []
    return chosen


def launch_variant(**fields) -> Long2ShortVariant:
    """Create a queued variant and send it to the gpu queue after commit (a broker that is down leaves it queued:
    the workers' recovery sends it). PathRefused naming the field (or merge knob) of a chosen checkpoint whose
    files were removed, checked again under the checkpoints' row locks in the creating transaction
    (keep_last_checkpoints)."""
    with transaction.atomic():
        refuse_removed_checkpoints(chosen_checkpoints(fields))
        return Long2ShortVariant.create_queued(partial(enqueue_job, "long2short"), **fields)
