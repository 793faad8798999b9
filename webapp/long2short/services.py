"""Launching long2short variants, and the checks of their settings shared by the API and the launch form."""

from __future__ import annotations

from functools import partial
from typing import Any, Mapping

from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import id_list, merge_sources_error
from webapp.runs.models import Checkpoint
from webapp.celery import enqueue_job


def variant_parameter_errors(project, method: str, parameters: Mapping[str, Any]) -> dict[str, str]:
    """A method's settings that pass every knob's check but can never run (knob -> why)."""
    if method != "merge":
        return {}
    checkpoint_ids = parameters.get("other_checkpoint_ids")
    if error := merge_sources_error(checkpoint_ids, parameters.get("other_run_iterations")):
        return {"other_checkpoint_ids": error}
    try:
        ids = id_list(checkpoint_ids, "other_checkpoint_ids")
    except ValueError as error:
        return {"other_checkpoint_ids": str(error)}
    found = set(Checkpoint.objects.filter(project=project, pk__in=ids).values_list("pk", flat=True))
    if missing := [pk for pk in ids if pk not in found]:
        return {"other_checkpoint_ids": f"Checkpoint {missing[0]} is not in this project."}
    return {}


def launch_variant(**fields) -> Long2ShortVariant:
    """Create a queued variant and send it to the gpu queue after commit (a broker that is down leaves it queued:
    the workers' recovery sends it)."""
    return Long2ShortVariant.create_queued(partial(enqueue_job, "long2short"), **fields)
