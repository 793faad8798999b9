"""In a real browser: the compare view overlays two runs' curves; the tables page downloads the API's bytes."""

from __future__ import annotations

import csv
import io
import time

import pytest
from django.urls import NoReverseMatch, reverse

from tests.browser.conftest import log_in, wait_until
from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
from webapp.runs.models import IterationMetric, RLRun

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TRACES_ON_PAGE = """
return Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(function (chart) {
  return (chart.data || []).map(function (trace) {
    return {name: String(trace.name), x: Array.from(trace.x || []), y: Array.from(trace.y || [])};
  });
});
"""


def page_url(name: str) -> str:
    try:
        return reverse(name)
    except NoReverseMatch:
        pytest.skip(f"this version has no {name!r} page yet")


def finished_run(project, prompt_set, alice, name: str, accuracies: list[float], tokens_per_step: float) -> RLRun:
    """A succeeded run whose mean response length grows by tokens_per_step per iteration."""
    run = RLRun.objects.create(project=project, name=name, prompt_set=prompt_set, owner=alice, status="succeeded",
                               config={"trainer_backend": "noop-test", "iterations": len(accuracies)},
                               current_iteration=len(accuracies), total_iterations=len(accuracies))
    IterationMetric.objects.bulk_create(
        IterationMetric(run=run, iteration=step, train_accuracy=accuracy,
                        mean_response_length=100.0 + tokens_per_step * step,
                        p95_response_length=150.0 + tokens_per_step * step,
                        loss=0.5, kl=0.01, tokens_generated=1000, seconds=1.0)
        for step, accuracy in enumerate(accuracies, start=1))
    return run


def test_the_compare_view_overlays_the_curves_of_two_runs(live_server, project, prompt_set, alice, browser, shoot):
    compare_url = page_url("compare")
    curves = {"long-cot": ([0.1, 0.3, 0.5, 0.6, 0.75], 60.0), "short-cot": ([0.2, 0.25, 0.4, 0.45, 0.5], 5.0)}
    runs = [finished_run(project, prompt_set, alice, name, *curve) for name, curve in curves.items()]
    log_in(browser, live_server.url, "alice", "alice-password")
    browser.get(f"{live_server.url}{compare_url}?runs={runs[0].pk},{runs[1].pk}")

    traces = wait_until(browser, lambda driver: driver.execute_script(TRACES_ON_PAGE), "the compare charts")
    time.sleep(0.5)  # let Plotly finish laying out every chart before the screenshot
    shoot("compare")
    for name, (accuracies, tokens_per_step) in curves.items():
        drawn = [trace for trace in traces if name in trace["name"] and trace["x"] == [1, 2, 3, 4, 5]]
        assert drawn, f"no curve of {name} by iteration among {[trace['name'] for trace in traces]}"
        lengths = [100.0 + tokens_per_step * step for step in range(1, 6)]
        assert any(trace["y"] == pytest.approx(accuracies) for trace in drawn), f"no accuracy curve of {name}"
        assert any(trace["y"] == pytest.approx(lengths) for trace in drawn), f"no response-length curve of {name}"
    x_ticks = browser.execute_script(
        "return Array.from(document.querySelectorAll('#compare-charts .xtick text')).map(t => t.textContent);")
    assert x_ticks and set(x_ticks) == {"1", "2", "3", "4", "5"}, f"iteration ticks {x_ticks}"  # no 1.5, 2.5


@pytest.fixture
def two_evaluations(project, alice):
    """Two succeeded evaluations of the same suite, with aime24 and math500 scores."""
    suite = BenchmarkSuite.objects.create(project=project, name="paper", benchmarks=[
        {"benchmark": "aime24", "samples_per_problem": 8}, {"benchmark": "math500", "samples_per_problem": 4}])
    scores = {"ours-rl": (0.775, 0.9), "baseline": (0.5, 0.95)}
    for model, (aime, math) in scores.items():
        evaluation = EvalRun.objects.create(project=project, suite=suite, model=model, owner=alice,
                                            status="succeeded")
        BenchmarkResult.objects.create(eval_run=evaluation, benchmark="aime24", score=aime, ci_low=aime - 0.05,
                                       ci_high=aime + 0.05, mean_response_tokens=1200.0, num_problems=30,
                                       samples_per_problem=8)
        BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=math, ci_low=math - 0.02,
                                       ci_high=math + 0.02, mean_response_tokens=800.0, num_problems=500,
                                       samples_per_problem=4)
    return suite


def downloaded_file(folder, timeout: float = 20.0):
    """The one finished download in `folder` (Chromium writes hidden temporaries and *.crdownload until done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = [path for path in folder.iterdir()
                 if not path.name.startswith(".") and not path.name.endswith(".crdownload")]
        if files:
            return files[0]
        time.sleep(0.2)
    raise AssertionError(f"no download finished in {folder} within {timeout}s")


def test_a_table_downloaded_from_the_tables_page_is_the_api_export(
        live_server, two_evaluations, alice, api_for, browser, downloads, shoot):
    from selenium.webdriver.common.by import By

    tables_url = page_url("benchmark-tables")
    log_in(browser, live_server.url, "alice", "alice-password")
    browser.get(f"{live_server.url}{tables_url}")
    link = wait_until(browser, lambda driver: driver.find_elements(By.CSS_SELECTOR, "a[href*='format=csv']"),
                      "a CSV download link")[0]
    shoot("tables")
    href = link.get_attribute("href")
    link.click()
    path = downloaded_file(downloads)

    api_path = "/api/benchmark-tables/?" + href.split("?", 1)[1]
    expected = api_for(alice).get(api_path)
    assert expected.status_code == 200 and path.read_bytes() == expected.content
    assert path.suffix == ".csv", f"the download is named {path.name}"
    header, *rows = csv.reader(io.StringIO(path.read_text()))
    scores = {row[1]: dict(zip(header, row)) for row in rows}
    assert set(scores) == {"ours-rl", "baseline"}, rows
    assert (scores["ours-rl"]["aime24 score"], scores["baseline"]["math500 score"]) == ("77.5", "95.0")
    assert scores["ours-rl"]["aime24 mean_tokens"] == "1200"


def test_the_evaluation_page_draws_accuracy_by_response_length(live_server, project, alice, browser, shoot):
    from webapp.evals.models import SampleResult

    suite = BenchmarkSuite.objects.create(project=project, name="lengths", benchmarks=[{"benchmark": "math500"}])
    evaluation = EvalRun.objects.create(project=project, suite=suite, model="tiny", owner=alice, status="succeeded")
    samples = [(10, True), (50, True), (99, False), (150, False), (300, True), (399, False)]
    SampleResult.objects.bulk_create(
        SampleResult(eval_run=evaluation, benchmark="math500", problem_id=f"p{index}", response_tokens=tokens,
                     correct=correct) for index, (tokens, correct) in enumerate(samples))
    BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=0.5, num_problems=6,
                                   samples_per_problem=1)
    log_in(browser, live_server.url, "alice", "alice-password")
    browser.get(f"{live_server.url}/evaluations/{evaluation.pk}/")

    traces = wait_until(browser, lambda driver: driver.execute_script(TRACES_ON_PAGE), "the length chart")
    shoot("evaluation-length-curve")
    accuracy, counts = traces
    assert (accuracy["name"], counts["name"]) == ("accuracy", "samples")
    assert sum(counts["y"]) == 6 and len(accuracy["x"]) == len(counts["x"])
    assert browser.find_element("css selector", "#length-curves figure figcaption").text == \
        "math500 (bins of 25 tokens)"
    background = browser.execute_script(
        "return document.querySelector('#length-curves .js-plotly-plot')._fullLayout.paper_bgcolor;")
    assert background == "rgba(0,0,0,0)"  # the charts' shared layout reached the page's own
    counts = browser.execute_script(
        "return Array.from(document.querySelectorAll('#length-curves .y2tick text')).map(t => t.textContent);")
    assert counts and all(label.isdigit() for label in counts), f"sample-count ticks {counts}"  # not 2.13, 22.6


def test_the_long2short_dashboard_draws_zero_scores_from_zero(live_server, project, alice, run, suite, browser,
                                                                 shoot):
    from webapp.long2short.models import Long2ShortVariant
    from webapp.runs.models import Checkpoint

    def evaluated(checkpoint, score, tokens):
        evaluation = EvalRun.objects.create(project=project, suite=suite, checkpoint=checkpoint, status="succeeded")
        BenchmarkResult.objects.create(eval_run=evaluation, benchmark="math500", score=score,
                                       mean_response_tokens=tokens)

    evaluated(Checkpoint.objects.create(project=project, run=run, iteration=10, path="/c/10"), 0.0, 900.0)
    evaluated(Checkpoint.objects.create(project=project, run=run, iteration=20, path="/c/20"), 0.0, 1200.0)
    variant = Long2ShortVariant.objects.create(project=project, name="merged", method="merge", parent_run=run)
    evaluated(Checkpoint.objects.create(project=project, variant=variant, path="/v/merged"), 0.0, 600.0)
    log_in(browser, live_server.url, "alice", "alice-password")
    browser.get(f"{live_server.url}{reverse('long2short-dashboard')}?parent={run.pk}")

    traces = wait_until(browser, lambda driver: driver.execute_script(TRACES_ON_PAGE), "the long2short chart")
    shoot("long2short-zero-scores")
    assert [trace["y"] for trace in traces] == [[0.0, 0.0], [0.0]]
    low, high = browser.execute_script(
        "return document.querySelector('#long2short-charts .js-plotly-plot')._fullLayout.yaxis.range;")
    assert low == 0 and high == pytest.approx(1.05)  # not Plotly's -100%..100% around a flat line
