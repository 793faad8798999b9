"""The run page's chart data: figure 5 (downsampled in the database) and figures 6/8 (accuracy vs length)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from django.db.models import Avg, ExpressionWrapper, F, IntegerField, Max, Subquery, Value
from django.db.models.functions import Greatest

from webapp.evals.models import BenchmarkResult
from webapp.jobs import JobStatus
from webapp.evals.benchmark_labels import suite_labels
from webapp.runs.models import IterationMetric, RLRun

MAX_CHART_POINTS = 500
CHART_FIELDS = ("iteration", "train_accuracy", "mean_response_length", "p95_response_length")


def chart_series(run: RLRun, max_points: int = MAX_CHART_POINTS) -> dict[str, list]:
    """Figure 5's series: at most `max_points` points, one query.

    Iterations are bucketed by integer division, width = ceil(last iteration / max_points); a point is the
    bucket's last iteration with the AVG of its accuracy, mean length and p95 length.
    """
    metrics = IterationMetric.objects.filter(run=run)
    last_iteration = Subquery(metrics.order_by("-iteration").values("iteration")[:1])
    width = Greatest(Value(1), (last_iteration + Value(max_points - 1)) / Value(max_points))
    bucket = ExpressionWrapper((F("iteration") - Value(1)) / width, output_field=IntegerField())
    rows = (metrics.order_by().annotate(bucket=bucket).values("bucket")
            .annotate(last=Max("iteration"), accuracy=Avg("train_accuracy"), mean=Avg("mean_response_length"),
                      p95=Avg("p95_response_length"))
            .order_by("bucket").values_list("last", "accuracy", "mean", "p95"))
    columns = list(zip(*rows)) or [()] * len(CHART_FIELDS)
    return {name: list(column) for name, column in zip(CHART_FIELDS, columns)}


@dataclass(frozen=True)
class TrendLine:
    """y = intercept + slope * x over [x_low, x_high]; slope_per_1k_tokens in accuracy points (percent)."""

    slope: float
    intercept: float
    x_low: float
    x_high: float
    slope_per_1k_tokens: float


def least_squares_line(xs: Sequence[float], ys: Sequence[float]) -> TrendLine | None:
    """The ordinary least-squares line of ys (accuracy, 0 to 1) on xs (tokens); None without two distinct xs."""
    if len(xs) != len(ys):
        raise ValueError(f"xs and ys differ in length: {len(xs)} and {len(ys)}")
    if len(set(xs)) < 2:
        return None
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread
    return TrendLine(slope=slope, intercept=mean_y - slope * mean_x, x_low=min(xs), x_high=max(xs),
                     slope_per_1k_tokens=slope * 1000 * 100)


def benchmark_series(run: RLRun) -> dict[str, dict[str, Any]]:
    """Per benchmark and suite, the succeeded evaluations of the run's checkpoints by iteration, and the
    accuracy-vs-length trend across them (figures 6 and 8); one query.

    A series holds one suite's results only (two suites may score one benchmark at other token limits or sample
    counts), labelled "benchmark (suite)" where several suites scored the benchmark; a checkpoint evaluated
    twice on one suite counts once, with its latest evaluation."""
    results = (BenchmarkResult.objects.fractions()
               .filter(eval_run__checkpoint__run=run, eval_run__status=JobStatus.SUCCEEDED)
               .order_by("benchmark", "eval_run__suite__name", "eval_run__checkpoint__iteration", "eval_run_id")
               .values_list("benchmark", "eval_run__suite_id", "eval_run__suite__name",
                            "eval_run__checkpoint__iteration", "score", "mean_response_tokens"))
    rows = list(results)
    labels = suite_labels((benchmark, suite_id, name) for benchmark, suite_id, name, *_ in rows)
    latest: dict[tuple, tuple] = {}
    for benchmark, suite_id, _, iteration, score, tokens in rows:  # ordered: the last of a checkpoint is its latest
        latest[(labels[(benchmark, suite_id)], iteration)] = (score, tokens)
    series: dict[str, dict[str, Any]] = {}
    for (label, iteration), (score, tokens) in latest.items():
        points = series.setdefault(label, {"iteration": [], "score": [], "mean_response_tokens": []})
        points["iteration"].append(iteration)
        points["score"].append(score)
        points["mean_response_tokens"].append(tokens)
    for points in series.values():
        pairs = [(tokens, score) for tokens, score in zip(points["mean_response_tokens"], points["score"])
                 if tokens is not None]
        trend = least_squares_line([x for x, _ in pairs], [y for _, y in pairs])
        points["trend"] = asdict(trend) if trend else None
    return series
