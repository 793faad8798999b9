"""Where a variant's models come from: its parent checkpoint, the run it descends from, checkpoints to merge."""

from __future__ import annotations

from typing import Any, Mapping

from django.db.models import Exists, OuterRef, Q, QuerySet

from common.checkpoint_balance import EvaluatedCheckpoint, best_balance
from common.id_lists import NotAnId, parse_id_list
from webapp.evals.models import EvalRun
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint, RLRun

MAX_ANCESTORS = 20  # a variant of a variant of ...: stop following parents after this many
WAITING_FOR_PARENT = (JobStatus.QUEUED, JobStatus.RUNNING)  # a parent run still making its checkpoints


class ParentUnavailable(Exception):
    """The parent cannot give a model: its run failed or was cancelled, or left no checkpoint."""


def source_run(variant: Long2ShortVariant) -> RLRun | None:
    """The run a variant descends from: its parent run, else its parent checkpoint's run (through variants)."""
    for _ in range(MAX_ANCESTORS):
        if variant.parent_run_id:
            return variant.parent_run
        checkpoint = variant.parent_checkpoint
        if checkpoint is None:
            return None
        if checkpoint.run_id:
            return checkpoint.run
        if checkpoint.variant_id is None:
            return None
        variant = checkpoint.variant
    return None


def parents_source_run(parent_run: RLRun | None, parent_checkpoint: Checkpoint | None) -> RLRun | None:
    """The run a variant with these parents would descend from (source_run, before the variant exists)."""
    return source_run(Long2ShortVariant(parent_run=parent_run, parent_checkpoint=parent_checkpoint))


def pending_parent_run(variant: Long2ShortVariant) -> RLRun | None:
    """The parent run the variant waits for: queued or running, or (long2short RL, which starts from the best
    balanced checkpoint) with checkpoint evaluations queued or running; a chosen parent checkpoint never waits."""
    if variant.parent_checkpoint_id or not variant.parent_run_id:
        return None
    run = variant.parent_run
    if run.status in WAITING_FOR_PARENT:
        return run
    if variant.method == BALANCED_START_METHOD and run.status == JobStatus.SUCCEEDED and \
            EvalRun.objects.filter(checkpoint__run=run, status__in=WAITING_FOR_PARENT).exists():
        return run
    return None


BALANCED_START_METHOD = "long2short_rl"


def evaluated_checkpoints(run: RLRun, suite_id: int | None) -> list[EvaluatedCheckpoint]:
    """The run's checkpoints with files whose latest succeeded evaluation on the suite (any suite when None) has
    results: accuracy and mean tokens averaged over its benchmarks."""
    evaluations = (EvalRun.objects.filter(checkpoint__run=run, checkpoint__files_removed_at=None,
                                          checkpoint__iteration__isnull=False, status=JobStatus.SUCCEEDED)
                   .select_related("checkpoint").prefetch_related("results").order_by("created_at", "pk"))
    if suite_id is not None:
        evaluations = evaluations.filter(suite_id=suite_id)
    latest = {evaluation.checkpoint_id: evaluation for evaluation in evaluations}  # the latest wins
    points = []
    for evaluation in latest.values():
        results = [result for result in evaluation.results.all() if result.mean_response_tokens is not None]
        if results:
            points.append(EvaluatedCheckpoint(
                key=evaluation.checkpoint_id, iteration=evaluation.checkpoint.iteration,
                accuracy=sum(result.score for result in results) / len(results),
                mean_tokens=sum(result.mean_response_tokens for result in results) / len(results)))
    return points


def balanced_start(variant: Long2ShortVariant, run: RLRun) -> tuple[Checkpoint, str] | None:
    """Long2short RL's start when the user pinned none: the best balanced evaluated checkpoint
    (common.checkpoint_balance) on the variant's suite, else the run's; None without any evaluated checkpoint."""
    suite_id = variant.evaluation_suite_id or run.evaluation_suite_id
    points = evaluated_checkpoints(run, suite_id)
    if not points:
        return None
    chosen, reason = best_balance(points)
    return Checkpoint.objects.get(pk=chosen.key), f"best balance: {reason}"


def parent_run_choices(project) -> QuerySet[RLRun]:
    """The runs of the project a variant may start from, newest first: those with a checkpoint whose files are kept,
    and those still queued or running (the variant waits for their checkpoint)."""
    kept = Checkpoint.objects.filter(run=OuterRef("pk"), files_removed_at=None)
    return (RLRun.objects.filter(project=project)
            .filter(Q(status__in=WAITING_FOR_PARENT) | Q(Exists(kept))).order_by("-created_at"))


def parent_run_error(run: RLRun | None, checkpoint: Checkpoint | None) -> str | None:
    """Why `run` cannot be a new variant's parent run (with `checkpoint` as its parent checkpoint, if given), or
    None: a finished run needs a checkpoint whose files are kept, and a failed or cancelled one is used through
    one of its checkpoints (the worker refuses to take its latest)."""
    if run is None or run.status in WAITING_FOR_PARENT:
        return None
    status = run.get_status_display().lower()
    if not run.checkpoints.filter(files_removed_at=None).exists():
        return (f"Run {run.name} (#{run.pk}, {status}) has no checkpoint whose files are kept: choose a run that "
                f"saved one.")
    if checkpoint is None and run.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        return (f"Run {run.name} (#{run.pk}) {status}: a variant needs a parent run that succeeded; choose one of "
                f"its checkpoints as the parent checkpoint instead.")
    return None


def resolve_parent_checkpoint(variant: Long2ShortVariant) -> tuple[Checkpoint, str]:
    """The checkpoint the variant starts from and why: the chosen (pinned) parent checkpoint, else for long2short
    RL the run's best balanced evaluated checkpoint, else the parent run's checkpoint with the highest iteration."""
    if variant.parent_checkpoint_id:
        return variant.parent_checkpoint, "the parent checkpoint chosen at launch"
    run = variant.parent_run
    if run is None:
        raise ParentUnavailable("the variant has neither a parent run nor a parent checkpoint")
    if run.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        raise ParentUnavailable(f"parent run '{run.name}' (#{run.pk}) {run.status}: a variant needs a parent run "
                                f"that succeeded; relaunch the variant from one of the run's checkpoints instead")
    if variant.method == BALANCED_START_METHOD and (balanced := balanced_start(variant, run)) is not None:
        return balanced
    checkpoint = run.checkpoints.filter(iteration__isnull=False).order_by("-iteration").first()
    if checkpoint is None:
        raise ParentUnavailable(f"parent run '{run.name}' (#{run.pk}) saved no checkpoint")
    why = "the run's last checkpoint"
    if variant.method == BALANCED_START_METHOD:
        why += " (no checkpoint of the run has a succeeded evaluation to balance accuracy and tokens by)"
    return checkpoint, why


def id_list(text: str | None, field: str) -> list[int]:
    """'3, 1,2' -> [3, 1, 2] (None or '' -> []); a part that is not a whole number >= 0 is refused naming the field."""
    try:
        return parse_id_list(text, minimum=0)
    except NotAnId as error:
        raise ValueError(f"{field}: '{error.part}' is not a whole number (give numbers separated by commas)") from None


def merge_ids(parameters: Mapping[str, Any], knob: str) -> list[int]:
    """A merge's list knob as numbers; [] where it is malformed (refused by the knob's own check, or when the
    variant runs)."""
    try:
        return id_list(parameters.get(knob), knob)
    except ValueError:
        return []


def merge_sources_error(checkpoint_ids: str | None, run_iterations: str | None) -> str | None:
    """A merge needs other models than its parent: checked when a variant is created and again on the worker."""
    if any(part.strip() for text in (checkpoint_ids, run_iterations) for part in str(text or "").split(",")):
        return None
    return "merge: give other_checkpoint_ids or other_run_iterations (the models merged with the parent)"


def merge_checkpoints(variant: Long2ShortVariant, checkpoint_ids: str | None,
                      run_iterations: str | None) -> list[Checkpoint]:
    """The checkpoints merged with the parent: MergeConfig's `other_checkpoint_ids` (same project), then the
    source run's checkpoints at `other_run_iterations`; a missing one is refused naming it."""
    ids = id_list(checkpoint_ids, "other_checkpoint_ids")
    iterations = id_list(run_iterations, "other_run_iterations")
    if error := merge_sources_error(checkpoint_ids, run_iterations):
        raise ValueError(error)
    found = {checkpoint.pk: checkpoint for checkpoint in Checkpoint.objects.filter(project=variant.project_id,
                                                                                   pk__in=ids)}
    if missing := [str(pk) for pk in ids if pk not in found]:
        raise ValueError(f"other_checkpoint_ids: no checkpoint {', '.join(missing)} in project "
                         f"'{variant.project.slug}'")
    chosen = [found[pk] for pk in ids]
    if iterations:
        chosen += run_checkpoints_at(source_run(variant), iterations)
    return chosen


def run_checkpoints_at(run: RLRun | None, iterations: list[int]) -> list[Checkpoint]:
    """The run's checkpoints at these iterations, in that order."""
    if run is None:
        raise ValueError("other_run_iterations: the variant descends from no run")
    by_iteration = {checkpoint.iteration: checkpoint
                    for checkpoint in run.checkpoints.filter(iteration__in=iterations).order_by("created_at")}
    if missing := [str(iteration) for iteration in iterations if iteration not in by_iteration]:
        saved = ", ".join(str(i) for i in run.checkpoints.order_by("iteration").values_list("iteration", flat=True))
        raise ValueError(f"other_run_iterations: run '{run.name}' (#{run.pk}) has no checkpoint at iteration "
                         f"{', '.join(missing)} (saved: {saved or 'none'})")
    if removed := removed_run_checkpoint_error(run, iterations):
        raise ValueError(f"other_run_iterations: {removed}")
    return [by_iteration[iteration] for iteration in iterations]


def removed_run_checkpoint_error(run: RLRun, iterations: list[int]) -> str | None:
    """Why the run's checkpoints at these iterations cannot be merged: the first whose files were removed
    (keep_last_checkpoints), or None."""
    removed = run.checkpoints.filter(iteration__in=iterations, files_removed_at__isnull=False).order_by("iteration")
    return removed[0].files_removed_error() if removed else None
