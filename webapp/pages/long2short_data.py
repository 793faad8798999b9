"""The long2short dashboard's numbers: accuracy versus mean response tokens of a parent and its variants.

Report figure 7: each variant is one point per benchmark; the parent run's evaluated checkpoints draw
the long-CoT curve. The token-efficiency table compares each variant with its parent.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from django.db.models import F, Q, QuerySet

from common.paired_bootstrap import PairedChange, paired_change
from webapp.evals.models import BenchmarkResult, SampleResult
from webapp.jobs import JobStatus
from webapp.long2short.models import Long2ShortVariant
from webapp.evals.benchmark_labels import suite_labels
from webapp.projects.models import Project
from webapp.runs.models import RLRun

MAX_VARIANTS = 50  # per parent, newest first
PARENT_CHOICES = 50
CHANGE_RESAMPLES = 2000  # bootstrap resamples of a change's interval (a table may hold hundreds of rows)


@dataclass(frozen=True)
class TokenEfficiency:
    """One variant on one benchmark against its parent; scores are fractions, tokens are mean response tokens."""

    score: float
    mean_tokens: float | None
    accuracy_change_points: float | None  # (score - parent score) * 100
    token_change_percent: float | None  # (tokens - parent tokens) / parent tokens * 100
    accuracy_per_1k_tokens: float | None  # score in percent points / (tokens / 1000)
    # 95% paired two-level bootstrap interval (common.paired_bootstrap) of the accuracy change, points, and of the
    # token change, percent of the parent's tokens; None unless both scored the same problems (at least two)
    accuracy_change_interval: tuple[float, float] | None = None
    token_change_interval: tuple[float, float] | None = None
    # the two were graded under different truncation policies (evaluation.outcome): the change is not like for like
    grading_differs: bool = False


def accuracy_per_1k_tokens(score: float, mean_tokens: float | None) -> float | None:
    """Accuracy points bought per thousand response tokens: 0.6 at 2000 tokens -> 30.0; None without tokens."""
    if not mean_tokens:
        return None
    return score * 100 / (mean_tokens / 1000)


def token_efficiency(score: float, mean_tokens: float | None,
                     parent_score: float | None, parent_tokens: float | None) -> TokenEfficiency:
    """A variant's score and tokens, their change versus the parent, and accuracy per 1k tokens."""
    points = None if parent_score is None else (score - parent_score) * 100
    tokens_percent = None
    if mean_tokens is not None and parent_tokens:
        tokens_percent = (mean_tokens - parent_tokens) / parent_tokens * 100
    return TokenEfficiency(score, mean_tokens, points, tokens_percent, accuracy_per_1k_tokens(score, mean_tokens))


ProblemSamples = dict[str, tuple[list[float], list[float]]]  # problem id -> (1/0 correct, tokens) of its samples


def paired_changes(variant: ProblemSamples, parent: ProblemSamples,
                   resamples: int = CHANGE_RESAMPLES) -> tuple[PairedChange, PairedChange] | None:
    """(accuracy change in points, token change in tokens), variant minus parent, each with its 95% paired
    two-level bootstrap interval (problems in pairs, then samples within each: common.paired_bootstrap). None
    unless both evaluated the same problems, at least two."""
    if len(variant) < 2 or variant.keys() != parent.keys():
        return None
    problems = sorted(variant)
    accuracy = paired_change([parent[p][0] for p in problems], [variant[p][0] for p in problems], resamples=resamples)
    tokens = paired_change([parent[p][1] for p in problems], [variant[p][1] for p in problems], resamples=resamples)
    return accuracy.scaled(100), tokens


def problem_samples(eval_run_ids: set[int]) -> dict[tuple[int, str], ProblemSamples]:
    """(evaluation, benchmark) -> problem id -> its samples' correctness and tokens (one query)."""
    rows = (SampleResult.objects.filter(eval_run_id__in=eval_run_ids).order_by()
            .values_list("eval_run_id", "benchmark", "problem_id", "correct", "response_tokens"))
    samples: dict[tuple[int, str], ProblemSamples] = {}
    for eval_run_id, benchmark, problem_id, correct, tokens in rows:
        correct_list, token_list = samples.setdefault((eval_run_id, benchmark), {}).setdefault(problem_id, ([], []))
        correct_list.append(1.0 if correct else 0.0)
        token_list.append(float(tokens))
    return samples


def checkpoint_label(name: str, iteration: int | None) -> str:
    return name if iteration is None else f"{name} @ {iteration}"


# ---------------------------------------------------------------- queries


def parent_choices(project: Project | None) -> QuerySet:
    """The project's runs that have variants (directly or through a checkpoint), newest first."""
    if project is None:
        return RLRun.objects.none()
    with_variants = Q(variants__isnull=False) | Q(checkpoints__child_variants__isnull=False)
    return (RLRun.objects.filter(with_variants, project=project).distinct().only("pk", "name", "created_at")
            .order_by("-created_at", "-pk")[:PARENT_CHOICES])


def variants_of(parent: RLRun) -> list[Long2ShortVariant]:
    """Variants of the run or of one of its checkpoints, newest first (one query)."""
    return list(Long2ShortVariant.objects.filter(Q(parent_run=parent) | Q(parent_checkpoint__run=parent))
                .select_related("parent_checkpoint").order_by("-created_at", "-pk")[:MAX_VARIANTS])


def evaluated_results(parent: RLRun, variants: Sequence[Long2ShortVariant]) -> list[dict[str, Any]]:
    """Succeeded results of the parent's and the variants' checkpoints (one query), oldest evaluation first;
    "benchmark" names the series (benchmark_labels.suite_labels: "benchmark (suite)" where suites differ)."""
    sources = Q(eval_run__checkpoint__run=parent) | Q(eval_run__checkpoint__variant__in=[v.pk for v in variants])
    rows = list(
        BenchmarkResult.objects.fractions().filter(sources, eval_run__status=JobStatus.SUCCEEDED)
        .annotate(checkpoint_id=F("eval_run__checkpoint_id"), run_id=F("eval_run__checkpoint__run_id"),
                  variant_id=F("eval_run__checkpoint__variant_id"), iteration=F("eval_run__checkpoint__iteration"),
                  suite_id=F("eval_run__suite_id"), suite_name=F("eval_run__suite__name"))
        .order_by("eval_run__created_at", "eval_run_id")
        .values("checkpoint_id", "run_id", "variant_id", "iteration", "benchmark", "score", "mean_response_tokens",
                "suite_id", "suite_name", "eval_run_id", "metrics")
    )
    labels = suite_labels((row["benchmark"], row["suite_id"], row["suite_name"]) for row in rows)
    return [{**row, "benchmark": labels[(row["benchmark"], row["suite_id"])], "benchmark_name": row["benchmark"]}
            for row in rows]


# ---------------------------------------------------------------- assembling


def latest_by(rows: Sequence[dict], key) -> dict:
    """key(row) -> the last row with that key (rows come oldest first, so the latest evaluation wins)."""
    return {key(row): row for row in rows}


def parent_points(parent: RLRun, rows: Sequence[dict]) -> dict[str, list[dict]]:
    """Benchmark -> the parent's checkpoints as points, by iteration."""
    by_checkpoint = latest_by([row for row in rows if row["run_id"] == parent.pk],
                              lambda row: (row["benchmark"], row["checkpoint_id"]))
    points: dict[str, list[dict]] = {}
    for row in sorted(by_checkpoint.values(), key=lambda row: (row["iteration"] is None, row["iteration"] or 0)):
        points.setdefault(row["benchmark"], []).append({
            "label": checkpoint_label(parent.name, row["iteration"]), "checkpoint": row["checkpoint_id"],
            "iteration": row["iteration"], "score": row["score"], "tokens": row["mean_response_tokens"]})
    return points


def parent_reference(variant: Long2ShortVariant, benchmark: str, points: dict[str, list[dict]]) -> dict | None:
    """The parent point a variant is compared with: the checkpoint it started from, on the same benchmark and
    suite; None (no change shown) when that checkpoint has no result there, rather than another model's."""
    started_from = variant.parent_checkpoint_id or variant.started_from_id
    return next((point for point in points.get(benchmark, []) if point["checkpoint"] == started_from), None)


def dashboard_data(parent: RLRun) -> dict[str, Any]:
    """Per benchmark: the parent's curve and one point per variant; the token-efficiency rows, each change with
    its paired interval (four queries)."""
    variants = variants_of(parent)
    rows = evaluated_results(parent, variants)
    parents = parent_points(parent, rows)
    latest = latest_by([row for row in rows if row["variant_id"] is not None],
                       lambda row: (row["benchmark"], row["variant_id"]))
    parent_rows = latest_by([row for row in rows if row["run_id"] == parent.pk],
                            lambda row: (row["benchmark"], row["checkpoint_id"]))
    benchmarks = sorted({row["benchmark"] for row in rows})
    charts, table, compared = [], [], []
    for benchmark in benchmarks:
        variant_points = []
        for variant in variants:
            row = latest.get((benchmark, variant.pk))
            if row is None:
                continue
            reference = parent_reference(variant, benchmark, parents)
            efficiency = token_efficiency(row["score"], row["mean_response_tokens"],
                                          reference and reference["score"], reference and reference["tokens"])
            point = {"label": f"{variant.name} ({variant.get_method_display()})", "variant": variant.pk,
                     "score": row["score"], "tokens": row["mean_response_tokens"]}
            variant_points.append(point)
            table.append({**point, "point": point, "benchmark": benchmark, "efficiency": efficiency,
                          "reference": reference["label"] if reference else None})
            if reference is not None:
                compared.append((table[-1], row, parent_rows[(benchmark, reference["checkpoint"])]))
        charts.append({"benchmark": benchmark, "parent": parents.get(benchmark, []), "variants": variant_points})
    add_change_intervals(compared)
    return {"parent": {"id": parent.pk, "name": parent.name}, "charts": charts, "table": table,
            "variants": variants}


def truncation_policy(row: dict) -> bool:
    """Whether a result counted cut-off responses wrong (results from before the policy did not)."""
    metrics = row["metrics"] if isinstance(row["metrics"], dict) else {}
    return bool(metrics.get("truncated_counts_wrong", False))


def scores_its_samples(row: dict, samples: ProblemSamples) -> bool:
    """Whether the result's score is the mean of its problems' sample accuracies (an lm-eval task's own metric
    may be another number, which a bootstrap of the samples would not describe)."""
    if not samples:
        return False
    accuracies = [sum(correct) / len(correct) for correct, _ in samples.values()]
    return abs(sum(accuracies) / len(accuracies) - row["score"]) < 1e-9


def add_change_intervals(compared: list[tuple[dict, dict, dict]]) -> None:
    """Give each (table row, variant result, parent result) its changes' paired intervals (one query, over these
    evaluations only), or mark that the two were graded under different truncation policies. The row's point
    gets the intervals as bars around itself (the parent's value plus the change's interval)."""
    samples = problem_samples({result["eval_run_id"] for _, variant, parent in compared
                               for result in (variant, parent)})
    for table_row, variant, parent in compared:
        if truncation_policy(variant) != truncation_policy(parent):
            table_row["efficiency"] = replace(table_row["efficiency"], grading_differs=True)
            continue
        ours, theirs = (samples.get((result["eval_run_id"], result["benchmark_name"]), {})
                        for result in (variant, parent))
        if not (scores_its_samples(variant, ours) and scores_its_samples(parent, theirs)):
            continue
        changes = paired_changes(ours, theirs)
        if changes is None:
            continue
        accuracy, tokens = changes
        parent_tokens = parent["mean_response_tokens"]
        token_percent = (tokens.low / parent_tokens * 100, tokens.high / parent_tokens * 100) if parent_tokens \
            else None
        table_row["efficiency"] = replace(table_row["efficiency"], token_change_interval=token_percent,
                                          accuracy_change_interval=(accuracy.low, accuracy.high))
        table_row["point"]["score_interval"] = [parent["score"] + accuracy.low / 100,
                                                parent["score"] + accuracy.high / 100]
        if parent_tokens:
            table_row["point"]["tokens_interval"] = [parent_tokens + tokens.low, parent_tokens + tokens.high]
