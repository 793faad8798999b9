"""keep_last_checkpoints on the data side: which of a run's checkpoints jobs still need, and the removals the worker
records before it deletes any files (approve_removals); the web side's re-check of a chosen checkpoint under its
row lock (refuse_removed_checkpoints), so that a job and a removal never both go through."""

from __future__ import annotations

import os
from typing import Iterable, Mapping

from django.db.models import Q
from django.utils import timezone

from common.path_rules import PathRefused, is_within
from webapp.evals.models import BenchmarkSuite, EvalRun, GraderAudit
from webapp.jobs import TERMINAL_STATUSES
from webapp.long2short.models import Long2ShortVariant
from webapp.long2short.parents import merge_ids, source_run
from webapp.path_policy import MODEL_KNOBS
from webapp.runs.models import Checkpoint, RLRun


def approve_removals(run: RLRun, iterations: list[int]) -> list[int]:
    """Of these iterations of the run's checkpoints, the ones no queued or running job needs, recorded as removed
    (`files_removed_at`, with the path-registered checkpoints of the same folders); inside the caller's transaction.

    The rows are locked first (select_for_update) and the pins computed after: a job created with one of them
    either committed first (its pin is seen) or waits for this transaction and then finds the row removed. An
    iteration without a row is not approved (the next start records its folder, a later save removes it)."""
    rows = Checkpoint.objects.filter(run=run, iteration__in=iterations)
    folders = {row.iteration: os.path.realpath(row.path) for row in rows}
    registered = registered_copies(run.project_id, folders.values())
    locked = list(Checkpoint.objects.select_for_update().filter(Q(run=run, iteration__in=iterations) |
                                                                Q(pk__in=registered)).order_by("pk"))
    pinned = pinned_iterations(run, folders)
    approved = sorted({row.iteration for row in locked if row.run_id == run.pk and row.iteration not in pinned})
    gone = [folders[iteration] for iteration in approved]
    marked = [row.pk for row in locked if (row.run_id == run.pk and row.iteration in approved) or
              (row.pk in registered and any(is_within(os.path.realpath(row.path), folder) for folder in gone))]
    Checkpoint.objects.filter(pk__in=marked, files_removed_at=None).update(files_removed_at=timezone.now())
    return approved


def registered_copies(project_id: int, folders: Iterable[str]) -> list[int]:
    """The project's checkpoints registered by path (no run, no variant) inside these resolved folders."""
    folders = list(folders)
    registered = Checkpoint.objects.filter(project_id=project_id, run=None, variant=None).values_list("pk", "path")
    return [pk for pk, path in registered if any(is_within(os.path.realpath(path), folder) for folder in folders)]


def pinned_iterations(run: RLRun, folders: Mapping[int, str] | None = None) -> set[int]:
    """Iterations of the run's checkpoints that a queued or running job uses: an evaluation's checkpoint; a
    variant's parent checkpoint, the one it started from, the checkpoints it merges (`other_checkpoint_ids`, and
    `other_run_iterations` of the run it descends from); and, of `folders` (iteration -> resolved folder), those a
    job names by path (paths_named_by_jobs)."""
    used, pinned = checkpoints_in_use(run)
    pinned |= set(Checkpoint.objects.filter(run=run, pk__in=used, iteration__isnull=False)
                  .values_list("iteration", flat=True))
    if folders:
        named = paths_named_by_jobs(run.project_id, used)
        pinned |= {iteration for iteration, folder in folders.items() if any(is_within(path, folder)
                                                                             for path in named)}
    return pinned


def checkpoints_in_use(run: RLRun) -> tuple[set[int], set[int]]:
    """(ids of the project's checkpoints that queued or running evaluations and variants use, iterations of the
    run that variants descending from it merge by `other_run_iterations`)."""
    used = set(live(EvalRun.objects.filter(project_id=run.project_id, checkpoint__isnull=False))
               .values_list("checkpoint_id", flat=True))
    iterations: set[int] = set()
    for variant in live(Long2ShortVariant.objects.filter(project_id=run.project_id)):
        used |= {variant.parent_checkpoint_id, variant.started_from_id}
        used |= set(merge_ids(variant.parameters, "other_checkpoint_ids"))
        merged = merge_ids(variant.parameters, "other_run_iterations")
        if merged and (descends_from := source_run(variant)) is not None and descends_from.pk == run.pk:
            iterations |= set(merged)
    return used - {None}, iterations


def paths_named_by_jobs(project_id: int, used_checkpoints: Iterable[int]) -> set[str]:
    """The resolved absolute paths that the project's queued or running jobs name as a model (README "Allowed
    paths"): an evaluation's `model`, a run's `model` and `judge_model`, the judge models of their suites, an
    audit's `judge_model`, and the paths of the checkpoints registered by path among `used_checkpoints`."""
    evaluations = live(EvalRun.objects.filter(project_id=project_id))
    runs = live(RLRun.objects.filter(project_id=project_id))
    names = list(evaluations.values_list("model", flat=True))
    names += [config.get(knob) for config in runs.values_list("config", flat=True) for knob in MODEL_KNOBS]
    suites = BenchmarkSuite.objects.filter(Q(eval_runs__in=evaluations) | Q(rl_runs__in=runs)).distinct()
    names += [entry.get("judge_model") for benchmarks in suites.values_list("benchmarks", flat=True)
              for entry in benchmarks if isinstance(entry, dict)]
    names += [grader.get("judge_model") for grader in live(GraderAudit.objects.filter(eval_run__project_id=project_id))
              .values_list("grader", flat=True) if isinstance(grader, dict)]
    names += Checkpoint.objects.filter(pk__in=used_checkpoints, run=None, variant=None).values_list("path", flat=True)
    return {os.path.realpath(name) for name in names if isinstance(name, str) and os.path.isabs(name)}


def live(jobs):
    """The queued and running jobs of a queryset."""
    return jobs.exclude(status__in=TERMINAL_STATUSES)


def refuse_removed_checkpoints(chosen: Mapping[str, Iterable[Checkpoint]]) -> None:
    """Lock the checkpoints a new job chooses (field -> checkpoints) and refuse, with PathRefused naming the field,
    one whose files were removed meanwhile; inside the transaction that creates the job (see approve_removals)."""
    ids = {checkpoint.pk for checkpoints in chosen.values() for checkpoint in checkpoints}
    current = {row.pk: row for row in Checkpoint.objects.select_for_update().filter(pk__in=ids).order_by("pk")}
    for field, checkpoints in chosen.items():
        for checkpoint in checkpoints:
            if checkpoint.pk in current and (removed := current[checkpoint.pk].files_removed_error()):
                raise PathRefused(field, removed)
