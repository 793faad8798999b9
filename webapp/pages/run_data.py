"""What the run page shows and polls: status, progress and ETA, log tail, chart data and the config table."""

from __future__ import annotations

from typing import Any

from django.db.models import Avg

from common.knobs import describe_knobs
from training.config import RLConfig
from webapp.jobs import JobStatus
from webapp.pages.run_charts import benchmark_series, chart_series
from webapp.runs.models import IterationMetric, RLRun

LOG_TAIL_LINES = 400
ETA_RECENT_ITERATIONS = 20


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


def status_payload(run: RLRun) -> dict[str, Any]:
    """The run's state as JSON-ready data, for the page's periodic refresh (a fixed number of queries)."""
    eta = eta_seconds(run)
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
        "error": run.error,
        "traceback": run.traceback,
        "log_tail": log_tail(run.log),
        "metrics": chart_series(run),
        "benchmarks": benchmark_series(run),
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
