"""The run page's data: figure 5 downsampled in the database, per-benchmark curves, trend slopes, ETA, query counts."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
from webapp.jobs import JobStatus
from webapp.pages.run_charts import benchmark_series, chart_series, least_squares_line
from webapp.pages.run_data import duration_text, eta_seconds
from webapp.runs.models import Checkpoint, IterationMetric, RLRun, TrainingSample

pytestmark = pytest.mark.django_db


def add_metrics(run, count: int, seconds=lambda i: 1.0) -> None:
    IterationMetric.objects.bulk_create(
        IterationMetric(run=run, iteration=i, train_accuracy=i / 1000, mean_response_length=100 + i,
                        p95_response_length=200 + 2 * i, seconds=seconds(i))
        for i in range(1, count + 1)
    )


def add_samples(run, count: int) -> None:
    TrainingSample.objects.bulk_create(
        TrainingSample(run=run, iteration=1 + i // 64, prompt_id="1", problem="p", sample_index=i % 64,
                       response="r" * 50, reward=1.0, correct=i % 2 == 0, response_tokens=i % 300)
        for i in range(count)
    )


def evaluate(run, suite, iteration: int, scores: dict[str, tuple[float, float]], status=JobStatus.SUCCEEDED):
    """A checkpoint of `run` at `iteration` (made on first need) and its evaluation with {benchmark: (score, mean
    tokens)}."""
    checkpoint, _ = Checkpoint.objects.get_or_create(project=run.project, run=run, iteration=iteration,
                                                     defaults={"path": f"/c/{iteration}"})
    evaluation = EvalRun.objects.create(project=run.project, suite=suite, checkpoint=checkpoint, status=status)
    for benchmark, (score, tokens) in scores.items():
        BenchmarkResult.objects.create(eval_run=evaluation, benchmark=benchmark, score=score,
                                       mean_response_tokens=tokens)


def test_a_short_run_keeps_every_iteration(run):
    add_metrics(run, 3)
    assert chart_series(run) == {"iteration": [1, 2, 3], "train_accuracy": [0.001, 0.002, 0.003],
                                 "mean_response_length": [101.0, 102.0, 103.0],
                                 "p95_response_length": [202.0, 204.0, 206.0]}


def test_many_iterations_are_averaged_in_buckets(run):
    add_metrics(run, 5)
    IterationMetric.objects.filter(run=run, iteration=2).update(train_accuracy=None)  # AVG skips it
    series = chart_series(run, max_points=2)  # width ceil(5 / 2) = 3: iterations 1-3 and 4-5
    assert series["iteration"] == [3, 5]
    assert series["train_accuracy"] == pytest.approx([(0.001 + 0.003) / 2, (0.004 + 0.005) / 2])
    assert series["mean_response_length"] == pytest.approx([102.0, 104.5])
    assert series["p95_response_length"] == pytest.approx([204.0, 209.0])


def test_a_long_run_is_drawn_with_at_most_500_points(client_for, alice, run):
    add_metrics(run, 1201)  # width ceil(1201 / 500) = 3: 401 buckets, the last holding iteration 1201 alone
    metrics = client_for(alice).get(reverse("run-status", kwargs={"pk": run.pk})).json()["metrics"]
    assert len(metrics["iteration"]) == 401
    assert metrics["iteration"][:2] == [3, 6] and metrics["iteration"][-1] == 1201
    assert metrics["train_accuracy"][0] == pytest.approx(0.002)
    assert metrics["mean_response_length"][1] == pytest.approx(105.0)
    assert metrics["p95_response_length"][-1] == pytest.approx(2602.0)


def test_the_least_squares_line_matches_a_hand_computation():
    # mean x 2000, mean y 0.4; Sxy = (-1000)(-0.2) + 0 + 1000(0.1) = 300; Sxx = 2e6; slope 1.5e-4 per token.
    trend = least_squares_line([1000, 2000, 3000], [0.2, 0.5, 0.5])
    assert trend.slope == pytest.approx(1.5e-4)
    assert trend.intercept == pytest.approx(0.1)
    assert trend.slope_per_1k_tokens == pytest.approx(15.0)  # accuracy points per 1,000 tokens
    assert (trend.x_low, trend.x_high) == (1000, 3000)


def test_the_least_squares_line_needs_two_distinct_lengths():
    assert least_squares_line([], []) is None
    assert least_squares_line([500, 500], [0.1, 0.3]) is None
    with pytest.raises(ValueError, match="differ in length"):
        least_squares_line([1, 2], [0.5])


def test_benchmark_series_follow_the_runs_succeeded_evaluations(run, suite, prompt_set, project):
    evaluate(run, suite, 20, {"math500": (0.5, 2000.0), "aime24": (0.1, 3000.0)})
    evaluate(run, suite, 10, {"math500": (0.2, 1000.0), "aime24": (0.0, None)})
    evaluate(run, suite, 30, {"math500": (0.5, 3000.0)})
    evaluate(run, suite, 40, {"math500": (0.9, 9000.0)}, status=JobStatus.FAILED)  # not finished: left out
    other = RLRun.objects.create(project=project, name="other", prompt_set=prompt_set, config=run.config)
    evaluate(other, suite, 10, {"math500": (0.7, 100.0)})
    series = benchmark_series(run)
    assert list(series) == ["aime24", "math500"]
    math = series["math500"]
    assert (math["iteration"], math["score"], math["mean_response_tokens"]) == \
        ([10, 20, 30], [0.2, 0.5, 0.5], [1000.0, 2000.0, 3000.0])
    assert math["trend"]["slope_per_1k_tokens"] == pytest.approx(15.0)
    assert math["trend"]["intercept"] == pytest.approx(0.1)
    assert series["aime24"]["iteration"] == [10, 20]
    assert series["aime24"]["trend"] is None  # one point with a length: no line


def test_accuracy_charts_leave_out_lm_eval_metrics_on_their_own_scale(run, suite):
    """A BLEU of 25.6 (0-100) or a perplexity is no accuracy: tables show it, the charts' percent axes do not."""
    evaluate(run, suite, 10, {"math500": (0.2, 1000.0), "lm-eval:wikitext": (12.3, None)})
    BenchmarkResult.objects.filter(benchmark="lm-eval:wikitext").update(
        metrics={"score_scale": "raw", "higher_is_better": False})
    evaluate(run, suite, 20, {"lm-eval:mmlu": (0.4, None)})  # lm-eval's accuracy: a fraction, charted
    BenchmarkResult.objects.filter(benchmark="lm-eval:mmlu").update(metrics={"score_scale": "fraction"})
    assert sorted(benchmark_series(run)) == ["lm-eval:mmlu", "math500"]


def test_each_suite_scoring_a_benchmark_is_its_own_series_and_a_rerun_counts_once(run, suite, project):
    """Two suites may score math500 at other token limits: one trend across both would mix them."""
    long = BenchmarkSuite.objects.create(project=project, name="long", benchmarks=suite.benchmarks)
    evaluate(run, suite, 10, {"math500": (0.2, 1000.0)})
    evaluate(run, suite, 20, {"math500": (0.3, 1100.0)})
    evaluate(run, suite, 20, {"math500": (0.4, 1200.0)})  # the same checkpoint again: the latest counts
    evaluate(run, long, 10, {"math500": (0.6, 8000.0)})
    evaluate(run, long, 20, {"math500": (0.7, 9000.0)})
    series = benchmark_series(run)
    assert sorted(series) == ["math500 (long)", f"math500 ({suite.name})"]
    assert (series[f"math500 ({suite.name})"]["iteration"], series[f"math500 ({suite.name})"]["score"]) == \
        ([10, 20], [0.2, 0.4])
    assert series["math500 (long)"]["mean_response_tokens"] == [8000.0, 9000.0]


def test_the_run_page_shows_each_benchmarks_slope(client_for, bob, run, suite):
    evaluate(run, suite, 10, {"math500": (0.2, 1000.0)})
    evaluate(run, suite, 20, {"math500": (0.5, 2000.0)})
    evaluate(run, suite, 30, {"math500": (0.5, 3000.0)})
    response = client_for(bob).get(reverse("run-detail", kwargs={"pk": run.pk}))
    content = response.content.decode()
    assert '<tr><td><code>math500</code></td><td class="num">3</td><td class="num">15.00</td></tr>' in content
    assert response.context["benchmark_data"]["math500"]["score"] == [0.2, 0.5, 0.5]
    assert 'id="run-benchmark-data"' in content and "/static/run_trends.js" in content


def test_eta_is_the_mean_of_recent_iterations_times_those_left(run):
    add_metrics(run, 25, seconds=lambda i: 100.0 if i <= 5 else 2.0)  # only the last 20 count
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, current_iteration=25, total_iterations=30)
    run.refresh_from_db()
    assert eta_seconds(run) == pytest.approx(10.0)
    assert eta_seconds(run, recent=22) == pytest.approx((2 * 100 + 20 * 2) / 22 * 5)


def test_eta_is_unknown_unless_running(run):
    add_metrics(run, 2)
    run.current_iteration = 2
    assert eta_seconds(run) is None  # queued
    run.status = JobStatus.SUCCEEDED
    assert eta_seconds(run) is None


@pytest.mark.parametrize("seconds, text", [(None, "—"), (42.4, "42 s"), (720, "12 min"),
                                           (3 * 3600 + 1200, "3 h 20 min"), (2 * 86400 + 4 * 3600, "2 d 4 h")])
def test_durations_read_as_rough_human_text(seconds, text):
    assert duration_text(seconds) == text


def test_the_status_json_reports_eta_and_benchmarks(client_for, alice, run, suite):
    add_metrics(run, 4, seconds=lambda i: 3.0)
    RLRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, current_iteration=4, total_iterations=10)
    evaluate(run, suite, 2, {"math500": (0.25, 800.0)})
    payload = client_for(alice).get(reverse("run-status", kwargs={"pk": run.pk})).json()
    assert (payload["eta_seconds"], payload["eta"]) == (18.0, "18 s")
    assert payload["benchmarks"] == {"math500": {"iteration": [2], "score": [0.25], "mean_response_tokens": [800.0],
                                                 "trend": None}}
    assert payload["is_resumable"] is False


def queries_for(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


@pytest.mark.parametrize("url_name, bound", [("run-detail", 14), ("run-status", 7), ("run-samples", 8)])
def test_pages_use_the_same_few_queries_for_10_or_1000_rows(client_for, alice, project, prompt_set, suite,
                                                            url_name, bound):
    counts = []
    for size in (10, 1000):
        run = RLRun.objects.create(project=project, name=f"size-{size}", prompt_set=prompt_set, status="running",
                                   config={"iterations": size}, total_iterations=size, current_iteration=size // 2)
        add_metrics(run, size)
        add_samples(run, size)
        for iteration in range(10, size + 1, max(size // 10, 10)):
            evaluate(run, suite, iteration, {"math500": (0.5, 1000.0 + iteration), "aime24": (0.1, 900.0)})
        counts.append(queries_for(client_for(alice), reverse(url_name, kwargs={"pk": run.pk})))
    assert counts[0] == counts[1] <= bound, counts


def test_the_metrics_table_shows_sampler_kl_parked_groups_policy_span_and_old_policy_tokens(client_for, alice, run):
    IterationMetric.objects.create(run=run, iteration=7, train_accuracy=0.5, seconds=2.0,
                                   extra={"groups_parked": 12.0, "policy_version_span": 3.0,
                                          "old_policy_token_share": 0.375, "sampler_kl": 2.13e-7})
    page = client_for(alice).get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "Parked</th>" in page and "Policy span</th>" in page and "Old-policy tokens</th>" in page
    assert "Sampler KL</th>" in page
    row = page[page.index('<td class="num">7</td>'):]
    row = row[:row.index("</tr>")]
    assert '<td class="num">12</td>' in row and '<td class="num">3</td>' in row and "37.5%" in row
    assert '<td class="num">2.1e-07</td>' in row
