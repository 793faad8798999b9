"""What the compare page overlays: runs' iteration curves and their checkpoints' benchmark scores.

Curves are downsampled in the database (iterations grouped into at most MAX_POINTS buckets per run,
averaged) and cumulative generated tokens come from a window function, so a page costs the same few
queries whatever the runs' length. Smoothing is an exponential moving average (`ema`).
"""

from __future__ import annotations

from typing import Any, Sequence

from django import forms
from django.db.models import (Avg, Case, F, FloatField, Func, IntegerField, Max, OuterRef, Q, Subquery, Sum, Value,
                              When, Window)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce

from common.id_lists import NotAnId, parse_id_list
from webapp.evals.models import BenchmarkResult
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.evals.benchmark_labels import suite_labels
from webapp.pages.long2short_data import paired_changes, problem_samples
from webapp.runs.models import IterationMetric, RLRun

MAX_POINTS = 500  # per series, after downsampling
MAX_SELECTED = 12  # runs, and variants, overlaid at once
PICKER_ROWS = 50  # the project's latest runs and variants offered as checkboxes
COMPARE_METRICS = {
    "train_accuracy": "Training accuracy",
    "mean_response_length": "Mean response length (tokens)",
    "p95_response_length": "95th-percentile response length (tokens)",
    "loss": "Loss",
    "kl": "KL to the iteration's start",
    "seconds": "Seconds per iteration",
}
# Metrics a row keeps in its `extra` JSON (left out of iterations that have none): the sampler-trainer gap
# (training/sampler_gap.py) and partial rollouts' share of older policies' tokens.
EXTRA_METRICS = {
    "sampler_kl": "Sampler KL (sampler || trainer, on the policy's own tokens)",
    "stale_sampler_kl": "Stale sampler KL (on older policies' tokens)",
    "old_policy_token_share": "Share of trained tokens from older policies",
}
COMPARE_METRICS |= EXTRA_METRICS
DEFAULT_METRICS = ("train_accuracy", "mean_response_length")
X_AXES = {"iteration": "Iteration", "tokens": "Cumulative generated tokens"}


# ---------------------------------------------------------------- pure functions


def ema(values: Sequence[float | None], smoothing: float) -> list[float | None]:
    """Exponential moving average: s_0 = v_0, s_t = smoothing * s_(t-1) + (1 - smoothing) * v_t.

    A missing value (None) stays None and leaves the average where it was; smoothing 0 returns the values.
    """
    if not 0 <= smoothing < 1:
        raise ValueError(f"smoothing must be in [0, 1), not {smoothing}")
    smoothed: list[float | None] = []
    average = None
    for value in values:
        if value is None:
            smoothed.append(None)
            continue
        average = value if average is None else smoothing * average + (1 - smoothing) * value
        smoothed.append(average)
    return smoothed


def bucket_width(last_iteration: int, max_points: int = MAX_POINTS) -> int:
    """Iterations per bucket so that iterations 0..last_iteration fall into at most max_points buckets."""
    return last_iteration // max_points + 1


# ---------------------------------------------------------------- the query string


class IdListField(forms.Field):
    """Ids as '1,2', or the parameter repeated (checkboxes); at most MAX_SELECTED."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value) -> list[int]:
        text = ",".join(value) if isinstance(value, (list, tuple)) else (value or "")
        try:
            ids = parse_id_list(text)
        except NotAnId as error:
            raise forms.ValidationError(f"{error}: give positive whole numbers separated by commas") from None
        if len(ids) > MAX_SELECTED:
            raise forms.ValidationError(f"choose at most {MAX_SELECTED}, not {len(ids)}")
        return ids


class CompareForm(forms.Form):
    """The compare page's query string: what to overlay, the x axis, smoothing and metrics."""

    runs = IdListField(required=False)
    variants = IdListField(required=False)
    x = forms.ChoiceField(choices=list(X_AXES.items()), required=False)
    smooth = forms.FloatField(required=False, min_value=0.0, max_value=0.99,
                              help_text="Exponential moving average weight of the past, 0 (none) to 0.99.")
    metric = forms.MultipleChoiceField(choices=list(COMPARE_METRICS.items()), required=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        cleaned["x"] = cleaned.get("x") or "iteration"
        cleaned["smooth"] = cleaned.get("smooth") or 0.0
        cleaned["metric"] = cleaned.get("metric") or list(DEFAULT_METRICS)
        return cleaned


def compare_form(query) -> CompareForm:
    """The form bound to a request's GET, with comma lists ('runs=1,2') and repeats (runs=1&runs=2) both accepted."""
    data = {"x": query.get("x", ""), "smooth": query.get("smooth", ""), "metric": query.getlist("metric")}
    if len(data["metric"]) == 1:
        data["metric"] = [name for name in data["metric"][0].split(",") if name]
    for name in ("runs", "variants"):
        data[name] = query.getlist(name)
    return CompareForm(data)


# ---------------------------------------------------------------- queries


def selected_sources(user, run_ids: list[int], variant_ids: list[int]) -> tuple[list[RLRun], list[Long2ShortVariant]]:
    """The chosen runs and variants the user may see, in the order given; LookupError names a missing one."""
    runs = {run.pk: run for run in RLRun.objects.visible_to(user).filter(pk__in=run_ids).only("pk", "name")}
    variants = {variant.pk: variant for variant in
                Long2ShortVariant.objects.visible_to(user).filter(pk__in=variant_ids).only("pk", "name", "method")}
    for field, wanted, found in (("runs", run_ids, runs), ("variants", variant_ids, variants)):
        missing = [pk for pk in wanted if pk not in found]
        if missing:
            raise LookupError(f"{field}: {missing[0]} not found")
    return [runs[pk] for pk in run_ids], [variants[pk] for pk in variant_ids]


class RunningSum(Func):
    """SUM of an aggregate, for a window over grouped rows: SUM(SUM(x)) OVER (...); Django's Sum refuses to nest."""

    function = "SUM"
    window_compatible = True


class GroupedWindow(Window):
    """A window over aggregated rows: marked as an aggregate so that Django leaves it out of GROUP BY."""

    contains_aggregate = True


def run_bucket_widths(run_ids: Sequence[int]) -> dict[int, int]:
    """Run id -> iterations per bucket, from each run's last reported iteration (one query)."""
    last = IterationMetric.objects.filter(run_id__in=run_ids).values("run_id").annotate(last=Max("iteration"))
    return {row["run_id"]: bucket_width(row["last"]) for row in last}


def metric_column(name: str):
    """A compare metric as a per-row float expression: a column, or a number from the row's `extra` (NULL when
    missing, so a bucket's mean is over the iterations that report it)."""
    if name in EXTRA_METRICS:
        return Cast(KeyTextTransform(name, "extra"), FloatField())
    return F(name)


def bucketed_metrics(run_ids: Sequence[int], metrics: Sequence[str]) -> dict[int, dict[str, list]]:
    """Per run: iteration (bucket's last), tokens (cumulative at bucket's end) and each metric's bucket mean.

    Two queries: the bucket widths, then one GROUP BY run and bucket with a running SUM window.
    """
    widths = run_bucket_widths(run_ids)
    if not widths:
        return {}
    width = Case(*(When(run_id=run_id, then=Value(size)) for run_id, size in widths.items()),
                 output_field=IntegerField())
    rows = (
        IterationMetric.objects.filter(run_id__in=widths)
        .annotate(bucket=F("iteration") / width)
        .values("run_id", "bucket")
        .annotate(
            last_iteration=Max("iteration"),
            tokens=GroupedWindow(RunningSum(Sum("tokens_generated")), partition_by=[F("run_id")],
                                 order_by=F("bucket").asc()),
            **{f"mean_{name}": Avg(metric_column(name)) for name in metrics},
        )
        .order_by("run_id", "bucket")
    )
    series: dict[int, dict[str, list]] = {}
    for row in rows:
        columns = series.setdefault(row["run_id"], {"iteration": [], "tokens": [], **{name: [] for name in metrics}})
        columns["iteration"].append(row["last_iteration"])
        columns["tokens"].append(int(row["tokens"]))
        for name in metrics:
            columns[name].append(row[f"mean_{name}"])
    return series


def tokens_until_checkpoint() -> Case:
    """Generated tokens of the checkpoint's run up to the checkpoint's iteration (a correlated SUM): 0 for the
    warm-up checkpoint (iteration 0, before any rollout), NULL for a checkpoint without an iteration."""
    earlier = (IterationMetric.objects.filter(run_id=OuterRef("eval_run__checkpoint__run_id"),
                                              iteration__lte=OuterRef("eval_run__checkpoint__iteration"))
               .order_by().values("run_id").annotate(total=Sum("tokens_generated")).values("total"))
    return Case(When(eval_run__checkpoint__iteration__isnull=True, then=Value(None)),
                default=Coalesce(Subquery(earlier), Value(0)), output_field=IntegerField())


def checkpoint_results(run_ids: Sequence[int], variant_ids: Sequence[int]) -> list[dict[str, Any]]:
    """Succeeded evaluations' results of the chosen runs' and variants' checkpoints (one query), oldest first,
    each `benchmark` named per suite ("benchmark (suite)" where several suites scored it: one series each)."""
    sources = Q(eval_run__checkpoint__run_id__in=run_ids) | Q(eval_run__checkpoint__variant_id__in=variant_ids)
    rows = list(
        BenchmarkResult.objects.fractions().filter(sources, eval_run__status=JobStatus.SUCCEEDED)
        .annotate(run_id=F("eval_run__checkpoint__run_id"), variant_id=F("eval_run__checkpoint__variant_id"),
                  iteration=F("eval_run__checkpoint__iteration"), tokens=tokens_until_checkpoint(),
                  suite_id=F("eval_run__suite_id"), suite_name=F("eval_run__suite__name"))
        .order_by("eval_run__created_at", "eval_run_id")
        .values("run_id", "variant_id", "iteration", "tokens", "benchmark", "score", "suite_id", "suite_name",
                "ci_low", "ci_high", "eval_run_id", "mean_response_tokens", "metrics")
    )
    labels = suite_labels((row["benchmark"], row["suite_id"], row["suite_name"]) for row in rows)
    return [{**row, "benchmark": labels[(row["benchmark"], row["suite_id"])], "benchmark_name": row["benchmark"]}
            for row in rows]


# ---------------------------------------------------------------- the chart data


def metric_charts(runs: Sequence[RLRun], metrics: Sequence[str], x_axis: str, smoothing: float) -> list[dict]:
    """One chart per metric, one series per run: x by iteration or tokens, y smoothed, raw kept."""
    columns = bucketed_metrics([run.pk for run in runs], metrics)
    charts = []
    for name in metrics:
        series = []
        for run in runs:
            run_columns = columns.get(run.pk, {"iteration": [], "tokens": [], name: []})
            series.append({"label": run.name, "run": run.pk, "x": run_columns[x_axis],
                           "y": ema(run_columns[name], smoothing), "raw": run_columns[name]})
        charts.append({"metric": name, "label": COMPARE_METRICS[name], "series": series})
    return charts


def benchmark_charts(runs: Sequence[RLRun], variants: Sequence[Long2ShortVariant], x_axis: str,
                     results: Sequence[dict]) -> list[dict]:
    """One chart per benchmark: each source's checkpoint scores by x (figure 10 of the report).

    The latest evaluation of a checkpoint counts; a score with no x (a variant's checkpoint without an
    iteration, or without tokens) becomes the series' `level`, drawn as a horizontal line.
    """
    labels = {("run", run.pk): run.name for run in runs}
    labels.update({("variant", variant.pk): str(variant) for variant in variants})
    points: dict[str, dict[tuple, dict]] = {}  # benchmark -> source -> x -> result row
    for row in results:
        source = ("run", row["run_id"]) if row["run_id"] is not None else ("variant", row["variant_id"])
        x = row["iteration"] if x_axis == "iteration" else row["tokens"]
        points.setdefault(row["benchmark"], {}).setdefault(source, {})[x] = row
    charts = []
    for benchmark in sorted(points):
        series = []
        for source, label in labels.items():
            by_x = points[benchmark].get(source)
            if by_x is None:
                continue
            placed = sorted((x, row) for x, row in by_x.items() if x is not None)
            level = by_x.get(None)
            series.append({"label": label, "x": [x for x, _ in placed], "y": [row["score"] for _, row in placed],
                           # each score's 95% bootstrap interval (None where the result has none)
                           "low": [row["ci_low"] for _, row in placed], "high": [row["ci_high"] for _, row in placed],
                           "level": level["score"] if level else None})
        charts.append({"benchmark": benchmark, "series": series})
    return charts


def last_checkpoint_differences(runs: Sequence[RLRun], results: Sequence[dict]) -> list[dict]:
    """Each later run against the first chosen one, per benchmark, at each run's last evaluated checkpoint: the
    accuracy change (points) and token change with their paired two-level bootstrap intervals, when both scored
    the same problems (one query)."""
    if len(runs) < 2:
        return []
    last: dict[tuple[int, str], dict] = {}
    for row in results:  # oldest evaluation first: the latest of the highest iteration wins
        if row["run_id"] is None or row["iteration"] is None:
            continue
        key = (row["run_id"], row["benchmark"])
        if key not in last or row["iteration"] >= last[key]["iteration"]:
            last[key] = row
    baseline, others = runs[0], runs[1:]
    pairs = [(other, last[(baseline.pk, benchmark)], row) for (run_id, benchmark), row in last.items()
             for other in others if run_id == other.pk and (baseline.pk, benchmark) in last]
    samples = problem_samples({row["eval_run_id"] for _, first, second in pairs for row in (first, second)})
    differences = []
    for other, first, second in sorted(pairs, key=lambda pair: (pair[1]["benchmark"], pair[0].pk)):
        changes = paired_changes(samples.get((second["eval_run_id"], second["benchmark_name"]), {}),
                                 samples.get((first["eval_run_id"], first["benchmark_name"]), {}))
        accuracy, tokens = changes if changes else (None, None)
        differences.append({
            "benchmark": first["benchmark"], "baseline": baseline.name, "run": other.name,
            "baseline_iteration": first["iteration"], "run_iteration": second["iteration"],
            "baseline_score": first["score"], "run_score": second["score"],
            "accuracy_change": (second["score"] - first["score"]) * 100,
            "accuracy_interval": [accuracy.low, accuracy.high] if accuracy else None,
            "token_change": tokens.change if tokens else None,
            "token_interval": [tokens.low, tokens.high] if tokens else None})
    return differences



def compare_payload(user, options: dict[str, Any]) -> dict[str, Any]:
    """Everything the compare page draws, as JSON-ready data (a constant number of queries)."""
    runs, variants = selected_sources(user, options["runs"], options["variants"])
    results = checkpoint_results([run.pk for run in runs], [variant.pk for variant in variants]) \
        if runs or variants else []
    return {
        "x_axis": options["x"],
        "x_label": X_AXES[options["x"]],
        "smoothing": options["smooth"],
        "metrics": metric_charts(runs, options["metric"], options["x"], options["smooth"]) if runs else [],
        "benchmarks": benchmark_charts(runs, variants, options["x"], results) if runs or variants else [],
        "differences": last_checkpoint_differences(runs, results),
    }
