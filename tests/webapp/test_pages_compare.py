"""Compare page: runs and variants overlaid, downsampled and summed in the database, smoothed, by x axis."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from webapp.evals.models import BenchmarkResult, EvalRun
from webapp.long2short.models import Long2ShortVariant
from webapp.runs.models import Checkpoint, IterationMetric, RLRun

pytestmark = pytest.mark.django_db

DATA_URL = reverse("compare-data")
PAGE_URL = reverse("compare")


def add_metrics(run, iterations, accuracy=lambda i: i % 2, length=lambda i: 100 + i, tokens=lambda i: 10 * i):
    IterationMetric.objects.bulk_create(
        IterationMetric(run=run, iteration=i, train_accuracy=accuracy(i), mean_response_length=length(i),
                        tokens_generated=tokens(i)) for i in iterations)


def second_run(run, name="run-2"):
    return RLRun.objects.create(project=run.project, name=name, prompt_set=run.prompt_set, config=run.config)


def evaluate(checkpoint, suite, scores, status="succeeded"):
    """A finished evaluation of the checkpoint: benchmark -> score."""
    evaluation = EvalRun.objects.create(project=checkpoint.project, suite=suite, checkpoint=checkpoint, status=status)
    BenchmarkResult.objects.bulk_create(BenchmarkResult(eval_run=evaluation, benchmark=name, score=score)
                                        for name, score in scores.items())
    return evaluation


def series_of(payload, metric):
    (chart,) = [chart for chart in payload["metrics"] if chart["metric"] == metric]
    return {series["label"]: series for series in chart["series"]}


def test_short_runs_keep_every_iteration_and_tokens_accumulate(client_for, alice, run):
    add_metrics(run, [1, 2, 3], tokens=lambda i: 100 * i)
    response = client_for(alice).get(DATA_URL, {"runs": run.pk, "x": "tokens"})
    assert response.status_code == 200
    accuracy = series_of(response.json(), "train_accuracy")["run-1"]
    assert accuracy["x"] == [100, 300, 600]  # 100, 100+200, 100+200+300
    assert accuracy["y"] == accuracy["raw"] == [1.0, 0.0, 1.0]
    assert series_of(response.json(), "mean_response_length")["run-1"]["y"] == [101.0, 102.0, 103.0]


def test_long_runs_are_averaged_into_at_most_500_buckets(client_for, alice, run):
    add_metrics(run, range(1, 1201))  # last iteration 1200: 3 iterations per bucket, buckets 0..400
    payload = client_for(alice).get(DATA_URL, {"runs": run.pk, "x": "iteration"}).json()
    length = series_of(payload, "mean_response_length")["run-1"]
    assert len(length["x"]) == 401
    assert length["x"][:3] == [2, 5, 8]  # each bucket's last iteration: {1, 2}, {3, 4, 5}, {6, 7, 8}
    assert length["y"][:3] == [101.5, 104.0, 107.0]
    assert length["x"][-1] == 1200 and length["y"][-1] == 1300.0  # the last bucket holds iteration 1200 only
    accuracy = series_of(payload, "train_accuracy")["run-1"]
    assert accuracy["y"][:3] == pytest.approx([0.5, 2 / 3, 1 / 3])  # {1, 0}, {1, 0, 1}, {0, 1, 0}
    tokens = client_for(alice).get(DATA_URL, {"runs": run.pk, "x": "tokens"}).json()
    x = series_of(tokens, "train_accuracy")["run-1"]["x"]
    assert x[:2] == [30, 150] and x[-1] == 10 * 1200 * 1201 // 2  # 10+20; +30+40+50; the sum of all


def test_smoothing_is_an_exponential_moving_average_of_the_bucket_means(client_for, alice, run):
    add_metrics(run, [1, 2, 3, 4], length=lambda i: [100, 300, 100, 500][i - 1])
    payload = client_for(alice).get(DATA_URL, {"runs": run.pk, "smooth": "0.5",
                                               "metric": "mean_response_length"}).json()
    assert [chart["metric"] for chart in payload["metrics"]] == ["mean_response_length"]
    series = series_of(payload, "mean_response_length")["run-1"]
    assert series["raw"] == [100.0, 300.0, 100.0, 500.0]
    assert series["y"] == [100.0, 200.0, 150.0, 325.0]  # s = 0.5 s + 0.5 v
    assert payload["smoothing"] == 0.5


def test_metrics_kept_in_the_rows_extra_are_averaged_over_the_iterations_that_report_them(client_for, alice, run):
    IterationMetric.objects.bulk_create([
        IterationMetric(run=run, iteration=1, tokens_generated=10, extra={"sampler_kl": 2e-7}),
        IterationMetric(run=run, iteration=2, tokens_generated=10, extra={"sampler_kl": 4e-7,
                                                                          "stale_sampler_kl": 0.03}),
        IterationMetric(run=run, iteration=3, tokens_generated=10, extra={})])
    payload = client_for(alice).get(DATA_URL, {"runs": run.pk, "metric": ["sampler_kl", "stale_sampler_kl"]}).json()
    assert series_of(payload, "sampler_kl")["run-1"]["raw"] == pytest.approx([2e-7, 4e-7, None])
    assert series_of(payload, "stale_sampler_kl")["run-1"]["raw"] == [None, 0.03, None]


def test_runs_share_the_chart_in_the_order_given(client_for, alice, run):
    other = second_run(run)
    add_metrics(run, [1, 2])
    add_metrics(other, [1, 2, 3], accuracy=lambda i: 0.25)
    payload = client_for(alice).get(DATA_URL, {"runs": f"{other.pk},{run.pk}"}).json()
    (chart, _) = payload["metrics"]
    assert [series["label"] for series in chart["series"]] == ["run-2", "run-1"]
    assert chart["series"][0]["y"] == [0.25, 0.25, 0.25]


def test_checkpoint_scores_are_placed_by_iteration_or_by_tokens(client_for, alice, run, suite):
    add_metrics(run, [1, 2, 3, 4], tokens=lambda i: 1000)
    early = Checkpoint.objects.create(project=run.project, run=run, iteration=2, path="/c/2")
    late = Checkpoint.objects.create(project=run.project, run=run, iteration=4, path="/c/4")
    evaluate(late, suite, {"math500": 0.6, "aime24": 0.1})
    evaluate(early, suite, {"math500": 0.3})
    evaluate(early, suite, {"math500": 0.4})  # the latest evaluation of a checkpoint counts
    evaluate(early, suite, {"math500": 0.9}, status="failed")  # unfinished ones do not
    client = client_for(alice)
    by_iteration = client.get(DATA_URL, {"runs": run.pk}).json()["benchmarks"]
    assert [chart["benchmark"] for chart in by_iteration] == ["aime24", "math500"]
    assert by_iteration[1]["series"] == [{"label": "run-1", "x": [2, 4], "y": [0.4, 0.6], "low": [None, None],
                                          "high": [None, None], "level": None}]
    by_tokens = client.get(DATA_URL, {"runs": run.pk, "x": "tokens"}).json()["benchmarks"]
    assert by_tokens[1]["series"][0]["x"] == [2000, 4000]


def test_two_suites_scoring_one_benchmark_draw_two_series(client_for, alice, run, suite):
    from webapp.evals.models import BenchmarkSuite

    long_suite = BenchmarkSuite.objects.create(project=run.project, name="long", benchmarks=suite.benchmarks)
    add_metrics(run, [1, 2])
    first = Checkpoint.objects.create(project=run.project, run=run, iteration=1, path="/c/1")
    second = Checkpoint.objects.create(project=run.project, run=run, iteration=2, path="/c/2")
    evaluate(first, suite, {"math500": 0.3})
    evaluate(second, suite, {"math500": 0.4})
    evaluate(second, long_suite, {"math500": 0.7})  # another token limit: not a point of the first curve
    charts = client_for(alice).get(DATA_URL, {"runs": run.pk}).json()["benchmarks"]
    assert {chart["benchmark"]: chart["series"][0]["y"] for chart in charts} == {
        "math500 (long)": [0.7], "math500 (math)": [0.3, 0.4]}


def test_the_warm_up_checkpoint_sits_at_zero_tokens(client_for, alice, run, suite):
    add_metrics(run, [1, 2], tokens=lambda i: 500)
    warm_up = Checkpoint.objects.create(project=run.project, run=run, iteration=0, path="/c/0")
    last = Checkpoint.objects.create(project=run.project, run=run, iteration=2, path="/c/2")
    evaluate(warm_up, suite, {"math500": 0.1})
    evaluate(last, suite, {"math500": 0.5})
    (chart,) = client_for(alice).get(DATA_URL, {"runs": run.pk, "x": "tokens"}).json()["benchmarks"]
    assert chart["series"] == [{"label": "run-1", "x": [0, 1000], "y": [0.1, 0.5], "low": [None, None],
                                "high": [None, None],
                                "level": None}]


def test_variants_contribute_their_checkpoint_scores(client_for, alice, run, suite):
    variant = Long2ShortVariant.objects.create(project=run.project, name="short", parent_run=run, method="dpo")
    final = Checkpoint.objects.create(project=run.project, variant=variant, path="/v/final")
    evaluate(final, suite, {"math500": 0.55})
    payload = client_for(alice).get(DATA_URL, {"variants": variant.pk}).json()
    assert payload["metrics"] == []
    assert payload["benchmarks"] == [{"benchmark": "math500", "series": [
        # no iteration: a horizontal line
        {"label": "short (DPO)", "x": [], "y": [], "low": [], "high": [], "level": 0.55}]}]


@pytest.mark.parametrize("params, field", [
    ({"smooth": "1.5"}, "smooth"),
    ({"x": "seconds"}, "x"),
    ({"runs": "1,abc"}, "runs"),
    ({"variants": "0"}, "variants"),
    ({"metric": "reward"}, "metric"),
    ({"runs": ",".join(str(pk) for pk in range(1, 14))}, "runs"),
])
def test_it_rejects_bad_parameters_naming_the_field(client_for, alice, params, field):
    client = client_for(alice)
    response = client.get(DATA_URL, params)
    assert response.status_code == 400
    assert list(response.json()) == [field]
    page = client.get(PAGE_URL, params)
    assert page.status_code == 400
    assert f"<strong>{field}</strong>" in page.content.decode()


def test_a_run_or_variant_of_another_project_is_a_404(client_for, charlie, run):
    variant = Long2ShortVariant.objects.create(project=run.project, name="short", parent_run=run, method="dpo")
    client = client_for(charlie)
    for params in ({"runs": run.pk}, {"variants": variant.pk}):
        assert client.get(DATA_URL, params).status_code == 404
        assert client.get(PAGE_URL, params).status_code == 404


def test_the_picker_lists_only_the_current_projects_runs(client_for, alice, bob, charlie, run):
    assert "run-1" in client_for(bob).get(PAGE_URL).content.decode()
    assert "run-1" not in client_for(charlie).get(PAGE_URL).content.decode()


def test_the_page_embeds_the_chart_data_and_loads_the_scripts(client_for, alice, run):
    add_metrics(run, [1, 2])
    content = client_for(alice).get(PAGE_URL, {"runs": run.pk}).content.decode()
    marker = '<script id="compare-data" type="application/json">'
    data = json.loads(content[content.index(marker) + len(marker):content.index("</script>", content.index(marker))])
    assert series_of(data, "train_accuracy")["run-1"]["x"] == [1, 2]
    assert f'value="{run.pk}" checked' in content
    assert '<script src="/static/plotly/plotly.min.js"></script>' in content
    assert '<script src="/static/compare.js"></script>' in content


def test_the_query_count_does_not_grow_with_iterations_runs_or_checkpoints(
        client_for, alice, run, suite, django_assert_num_queries):
    def add_checkpoints(source_run, count):
        for iteration in range(1, count + 1):
            evaluate(Checkpoint.objects.create(project=run.project, run=source_run, iteration=iteration, path="/c"),
                     suite, {"math500": 0.5, "aime24": 0.1})

    client = client_for(alice)
    add_metrics(run, range(1, 4))
    add_checkpoints(run, 1)
    variant = Long2ShortVariant.objects.create(project=run.project, name="v", parent_run=run, method="dpo")
    first_other = second_run(run, "other-0")
    add_checkpoints(first_other, 1)
    params = {"runs": f"{run.pk},{first_other.pk}", "variants": variant.pk, "x": "tokens"}
    # session, user, runs, variants, bucket widths, buckets, checkpoint scores, the last checkpoints' samples
    with django_assert_num_queries(8) as small:
        client.get(DATA_URL, params)
    others = [first_other] + [second_run(run, f"other-{index}") for index in range(1, 3)]
    for other in [run, *others]:
        add_metrics(other, range(4, 2001))
        add_checkpoints(other, 4)
    params["runs"] = ",".join(str(item.pk) for item in [run, *others])
    with django_assert_num_queries(len(small.captured_queries)):
        payload = client.get(DATA_URL, params).json()
    assert len(series_of(payload, "train_accuracy")) == 4


def test_the_page_query_count_does_not_grow_with_the_projects_runs(client_for, alice, run, django_assert_num_queries):
    client = client_for(alice)
    add_metrics(run, range(1, 5))
    with django_assert_num_queries(11) as few:
        client.get(PAGE_URL, {"runs": run.pk})
    for index in range(60):  # more than the picker shows
        add_metrics(second_run(run, f"other-{index}"), range(1, 50))
        Long2ShortVariant.objects.create(project=run.project, name=f"v{index}", parent_run=run, method="merge")
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(PAGE_URL, {"runs": run.pk})
    assert len(response.context["picker_runs"]) == len(response.context["picker_variants"]) == 50


def add_samples(evaluation, correct_by_problem: dict[str, list[bool]], tokens: int = 10):
    from webapp.evals.models import SampleResult

    SampleResult.objects.bulk_create(
        SampleResult(eval_run=evaluation, benchmark="math500", problem_id=problem, sample_index=index,
                     response_tokens=tokens, correct=correct)
        for problem, samples in correct_by_problem.items() for index, correct in enumerate(samples))


def test_the_last_checkpoints_differ_by_a_paired_interval_against_the_first_run(client_for, alice, run, suite):
    from common.paired_bootstrap import paired_change
    from webapp.pages.long2short_data import CHANGE_RESAMPLES

    other = second_run(run, "curriculum")
    baseline_samples = {"p1": [True, False], "p2": [False, False], "p3": [True, True], "p4": [False, True]}
    other_samples = {"p1": [True, True], "p2": [True, False], "p3": [True, True], "p4": [True, True]}
    for source, iteration, samples, tokens in ((run, 10, {"p1": [False, False]}, 5), (run, 20, baseline_samples, 12),
                                               (other, 20, other_samples, 15)):
        checkpoint = Checkpoint.objects.create(project=run.project, run=source, iteration=iteration, path="/c")
        score = sum(map(sum, samples.values())) / sum(map(len, samples.values()))
        add_samples(evaluate(checkpoint, suite, {"math500": score}), samples, tokens)
    response = client_for(alice).get(PAGE_URL, {"runs": f"{run.pk},{other.pk}"})
    (row,) = response.context["chart_data"]["differences"]
    expected = paired_change([baseline_samples[p] for p in sorted(baseline_samples)],
                             [other_samples[p] for p in sorted(other_samples)], resamples=CHANGE_RESAMPLES).scaled(100)
    assert (row["run"], row["run_iteration"], row["baseline"], row["baseline_iteration"]) == \
        ("curriculum", 20, "run-1", 20)  # the last checkpoints, not iteration 10
    assert row["accuracy_change"] == pytest.approx(37.5)  # 87.5% against 50%
    assert row["accuracy_interval"] == pytest.approx([expected.low, expected.high])
    assert row["token_change"] == pytest.approx(3.0) and row["token_interval"] == pytest.approx([3.0, 3.0])
    page = response.content.decode()
    assert "Difference at the last checkpoint" in page and f"[{expected.low:.1f}, {expected.high:.1f}]" in page
    assert client_for(alice).get(PAGE_URL, {"runs": run.pk}).context["chart_data"]["differences"] == []
