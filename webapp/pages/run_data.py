"""What the run page shows and polls: chart series, status, log tail and the config table."""

from __future__ import annotations

from typing import Any

from common.knobs import describe_knobs
from training.config import RLConfig
from webapp.runs.models import IterationMetric, RLRun

LOG_TAIL_LINES = 400
CHART_FIELDS = ("iteration", "train_accuracy", "mean_response_length", "p95_response_length")


def chart_series(run: RLRun) -> dict[str, list]:
    """One list per chart field, ordered by iteration (one query)."""
    rows = IterationMetric.objects.filter(run=run).order_by("iteration").values_list(*CHART_FIELDS)
    columns = list(zip(*rows)) or [()] * len(CHART_FIELDS)
    return {name: list(column) for name, column in zip(CHART_FIELDS, columns)}


def log_tail(log: str, lines: int = LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a job log."""
    return "".join(log.splitlines(keepends=True)[-lines:])


def status_payload(run: RLRun) -> dict[str, Any]:
    """The run's state as JSON-ready data, for the page's periodic refresh."""
    return {
        "status": run.status,
        "status_label": run.get_status_display(),
        "is_terminal": run.is_terminal,
        "cancel_requested": run.cancel_requested,
        "current_iteration": run.current_iteration,
        "total_iterations": run.total_iterations,
        "progress": run.progress,
        "error": run.error,
        "log_tail": log_tail(run.log),
        "metrics": chart_series(run),
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
