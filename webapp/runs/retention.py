"""keep_last_checkpoints on the data side: which of a run's checkpoints jobs still need (the worker keeps those)."""

from __future__ import annotations

from webapp.evals.models import EvalRun
from webapp.jobs import TERMINAL_STATUSES
from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import id_list, source_run
from webapp.runs.models import Checkpoint, RLRun


def pinned_iterations(run: RLRun) -> set[int]:
    """Iterations of the run's checkpoints that a queued or running evaluation or long2short variant uses: its
    evaluated checkpoint; a variant's parent checkpoint, the one it started from, the checkpoints it merges
    (`other_checkpoint_ids`, and `other_run_iterations` of the run it descends from)."""
    iteration_of = dict(Checkpoint.objects.filter(run=run, iteration__isnull=False).values_list("pk", "iteration"))
    used = set(EvalRun.objects.filter(checkpoint__run=run).exclude(status__in=TERMINAL_STATUSES)
               .values_list("checkpoint_id", flat=True))
    pinned: set[int] = set()
    for variant in Long2ShortVariant.objects.filter(project_id=run.project_id).exclude(status__in=TERMINAL_STATUSES):
        used |= {variant.parent_checkpoint_id, variant.started_from_id}
        used |= set(merged_ids(variant, "other_checkpoint_ids"))
        if merged_ids(variant, "other_run_iterations") and (descends_from := source_run(variant)) is not None \
                and descends_from.pk == run.pk:
            pinned |= set(merged_ids(variant, "other_run_iterations"))
    return pinned | {iteration_of[pk] for pk in used if pk in iteration_of}


def merged_ids(variant: Long2ShortVariant, knob: str) -> list[int]:
    """A merge's list knob as numbers; [] where it is malformed (the variant is refused when it runs)."""
    try:
        return id_list(variant.parameters.get(knob), knob)
    except ValueError:
        return []
