"""What the run page shows and polls: status, progress and ETA, log tail, chart data and the config table."""

from __future__ import annotations

from typing import Any

from django.db.models import Avg, Count, IntegerField, OuterRef, QuerySet, Subquery, Value, Window
from django.db.models.functions import Coalesce
from django.utils import dateformat, timezone
from django.utils.timesince import timesince

from common.knobs import describe_knobs
from training.config import RLConfig
from webapp.evals.models import EvalRun
from webapp.jobs import JobStatus
from webapp.pages.job_waiting import no_worker_hint
from webapp.pages.run_charts import benchmark_series, chart_series
from webapp.runs.models import Checkpoint, IterationMetric, RLRun

LOG_TAIL_LINES = 400
ETA_RECENT_ITERATIONS = 20
METRIC_TABLE_ROWS = 50  # the newest rows the polled page redraws: the metrics table's first page
METRIC_TABLE_FIELDS = ("iteration", "train_accuracy", "mean_response_length", "p95_response_length", "loss", "kl",
                       "tokens_generated", "tokens_reused", "seconds")


def log_tail(log: str, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a job log."""
    return "".join(log.splitlines(keepends=True)[-lines:])


def eta_seconds(run: RLRun, recent: int = ETA_RECENT_ITERATIONS) -> float | None:
    """Seconds left of a running run: mean seconds of its last `recent` iterations times those remaining."""
    remaining = run.total_iterations - run.current_iteration
    if run.status != JobStatus.RUNNING or remaining <= 0:
        return None
    newest = IterationMetric.objects.filter(run=run).order_by("-iteration")[:recent]
    mean = newest.aggregate(mean=Avg("seconds"))["mean"]
    return None if mean is None else mean * remaining


def eta_from_newest(run: RLRun, newest_seconds: list[float]) -> float | None:
    """eta_seconds without a query: `newest_seconds` are the seconds of the newest iterations, newest first."""
    remaining = run.total_iterations - run.current_iteration
    if run.status != JobStatus.RUNNING or remaining <= 0 or not newest_seconds:
        return None
    return sum(newest_seconds) / len(newest_seconds) * remaining


# Metrics from a row's `extra`, shown as columns: KL(sampler || trainer) on the tokens the trained policy sampled
# (training/sampler_gap.py), groups waiting in the replay buffer, policy versions inside the trained samples
# (0 = all from this iteration's policy), share of tokens from older policies.
METRIC_TABLE_EXTRAS = ("sampler_kl", "groups_parked", "policy_version_span", "old_policy_token_share")


def newest_metric_rows(run: RLRun, rows: int = METRIC_TABLE_ROWS) -> tuple[list[dict[str, Any]], int]:
    """(the newest `rows` metric rows as dicts of METRIC_TABLE_FIELDS and METRIC_TABLE_EXTRAS, newest first; the
    run's row count): one query.

    The count is a window over the whole filtered set, evaluated before the LIMIT.
    """
    newest = list(IterationMetric.objects.filter(run=run).order_by("-iteration")
                  .annotate(total=Window(expression=Count("pk"))).values(*METRIC_TABLE_FIELDS, "extra", "total")[:rows])
    total = newest[0]["total"] if newest else 0
    for row in newest:
        del row["total"]
        extra = row.pop("extra") or {}
        row.update({name: extra.get(name) for name in METRIC_TABLE_EXTRAS})
    return newest, total


def moment_text(moment) -> str:
    """A datetime as the run page prints it ('2026-11-24 06:08:59', current time zone); '—' when unset."""
    return dateformat.format(timezone.localtime(moment), "Y-m-d H:i:s") if moment else "—"


def duration_text(seconds: float | None) -> str:
    """A rough human duration: '45 s', '12 min', '3 h 20 min', '2 d 4 h'; '—' when unknown."""
    if seconds is None:
        return "—"
    minutes = round(seconds / 60)
    if seconds < 60:
        return f"{round(seconds)} s"
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def row_count(rows: QuerySet, outer: str) -> Coalesce:
    """An annotation: how many of `rows` (filtered on OuterRef) there are, as a subquery grouped by `outer`."""
    counted = rows.order_by().values(outer).annotate(count=Count("pk")).values("count")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def with_section_counts(runs: QuerySet[RLRun]) -> QuerySet[RLRun]:
    """The runs with the counts that change when the run page's "Checkpoints" and "Evaluations of its checkpoints"
    sections do: checkpoints saved and removed, evaluations queued, still active, running (subqueries of the
    run's own query: no query more)."""
    checkpoints = Checkpoint.objects.filter(run=OuterRef("pk"))
    evaluations = EvalRun.objects.filter(checkpoint__run=OuterRef("pk"))
    return runs.annotate(
        section_checkpoints=row_count(checkpoints, "run"),
        section_removed_checkpoints=row_count(checkpoints.filter(files_removed_at__isnull=False), "run"),
        section_evaluations=row_count(evaluations, "checkpoint__run"),
        section_active_evaluations=row_count(evaluations.filter(status__in=(JobStatus.QUEUED, JobStatus.RUNNING)),
                                             "checkpoint__run"),
        section_running_evaluations=row_count(evaluations.filter(status=JobStatus.RUNNING), "checkpoint__run"),
    )


def sections_key(run: RLRun) -> str:
    """A key of the run page's checkpoint and evaluation sections, from with_section_counts: the page reloads
    those sections when the polled key differs from the one it was drawn with."""
    counts = (run.section_checkpoints, run.section_removed_checkpoints, run.section_evaluations,
              run.section_active_evaluations, run.section_running_evaluations)
    return "-".join(str(count) for count in counts)


def warmup_text(run: RLRun) -> str:
    """'Warm-up SFT: step 120 of 400 · loss 0.531 · ETA 2 min' while the run's warm-up is under way, else ''."""
    progress = run.warmup_progress or {}
    if run.status != JobStatus.RUNNING or run.current_iteration > 0 or not progress:
        return ""
    step, steps = progress["step"], progress["steps"]
    if step >= steps:
        return f"Warm-up SFT done ({steps} steps, last loss {progress['loss']:.3f}); the first RL iteration runs"
    elapsed = progress["updated"] - progress["started"]
    eta = elapsed / step * (steps - step) if step else None
    return f"Warm-up SFT: step {step} of {steps} · loss {progress['loss']:.3f} · ETA {duration_text(eta)}"


def status_payload(run: RLRun) -> dict[str, Any]:
    """The run's state as JSON-ready data, for the page's periodic refresh (a fixed number of queries); `run`
    comes annotated by with_section_counts."""
    metric_rows, metric_count = newest_metric_rows(run)
    eta = eta_from_newest(run, [row["seconds"] for row in metric_rows[:ETA_RECENT_ITERATIONS]])
    heartbeat = run.heartbeat_at if run.status == JobStatus.RUNNING else None
    return {
        "status": run.status,
        "status_label": run.get_status_display(),
        "is_terminal": run.is_terminal,
        "is_resumable": run.is_resumable,
        "cancel_requested": run.cancel_requested,
        "current_iteration": run.current_iteration,
        "total_iterations": run.total_iterations,
        "progress": run.progress,
        "eta_seconds": eta,
        "eta": duration_text(eta),
        "warmup": warmup_text(run),
        "started_at": moment_text(run.started_at),
        "finished_at": moment_text(run.finished_at),
        "worker": run.worker or "—",
        "heartbeat_ago": f"{timesince(heartbeat)} ago" if heartbeat else "",
        "error": run.error,
        "traceback": run.traceback,
        "log_tail": log_tail(run.log),
        "metrics": chart_series(run),
        "metric_rows": metric_rows,
        "metric_count": metric_count,
        "benchmarks": benchmark_series(run),
        "queued_hint": no_worker_hint(run),
        "sections_key": sections_key(run),
        # the page polls while this holds: a run that ended may still have its checkpoints' evaluations queued
        # or running (one GPU worker starts them after the run), and its sections follow them
        "is_live": not run.is_terminal or run.section_active_evaluations > 0,
    }


def config_rows(config: dict[str, Any]) -> list[dict[str, Any]]:
    """(name, value, help) of every stored knob, in RLConfig's field order; unknown keys last."""
    knobs = {knob["name"]: knob for knob in describe_knobs(RLConfig)}
    ordered = [name for name in knobs if name in config] + sorted(set(config) - set(knobs))
    return [
        {"name": name, "value": config[name], "help": knobs.get(name, {}).get("help", ""),
         "is_default": name in knobs and config[name] == knobs[name]["default"]}
        for name in ordered
    ]
