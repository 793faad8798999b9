"""Benchmark tables page: models by benchmark with CI and tokens; its downloads are the REST export's bytes."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
from webapp.projects.models import Project
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db

PAGE_URL = reverse("benchmark-tables")
API_URL = "/api/benchmark-tables/"


def add_results(evaluation, rows):
    """rows: benchmark -> (score, ci_low, ci_high, mean tokens)."""
    BenchmarkResult.objects.bulk_create(
        BenchmarkResult(eval_run=evaluation, benchmark=name, score=score, ci_low=low, ci_high=high,
                        mean_response_tokens=tokens, num_problems=30, samples_per_problem=4)
        for name, (score, low, high, tokens) in rows.items())


@pytest.fixture
def evaluations(run, suite, alice):
    checkpoint = Checkpoint.objects.create(project=run.project, run=run, iteration=40, path="/c/40")
    ours = EvalRun.objects.create(project=run.project, suite=suite, checkpoint=checkpoint, status="succeeded")
    add_results(ours, {"math500": (0.775, 0.701, 0.842, 1234.4), "aime24": (0.3, 0.2, 0.4, 5000.0)})
    baseline = EvalRun.objects.create(project=run.project, suite=suite, model="Qwen/Qwen2.5-7B", status="succeeded")
    add_results(baseline, {"math500": (0.5, 0.4, 0.6, 900.0)})
    running = EvalRun.objects.create(project=run.project, suite=suite, model="tiny", status="running")
    add_results(running, {"math500": (0.1, 0.05, 0.15, 50.0)})
    return {"ours": ours, "baseline": baseline, "running": running}


def download_urls(content: str) -> dict[str, str]:
    """Format label -> the page's download link."""
    return {label: html.unescape(url) for url, label in
            re.findall(r'<a class="button small" href="([^"]+)" data-format="([^"]+)">', content)}


def test_the_page_shows_scores_intervals_and_tokens(client_for, alice, evaluations, suite):
    response = client_for(alice).get(PAGE_URL, {"suite": suite.pk})
    assert response.status_code == 200
    table = response.context["table"]
    assert table.columns == ("math500", "aime24") and [row.label for row in table.rows] == [
        "run-1 @ 40", "Qwen/Qwen2.5-7B"]  # succeeded only, oldest first
    content = response.content.decode()
    assert "<strong>77.5</strong> <span class=\"muted small\">[70.1, 84.2]</span>" in content  # the column's best
    assert '<td class="num">1234</td>' in content and '<td class="num">900</td>' in content
    assert "50.0 <span class=\"muted small\">[40.0, 60.0]</span>" in content


@pytest.mark.parametrize("params", [{"suite": "SUITE"}, {"suite": "SUITE", "tokens": "true"},
                                    {"include_unfinished": "true"}, {"evaluations": "EVALUATIONS"}])
def test_every_download_is_the_rest_exports_bytes(client_for, api_for, alice, evaluations, suite, params):
    ids = f"{evaluations['baseline'].pk},{evaluations['ours'].pk}"
    params = {name: {"SUITE": str(suite.pk), "EVALUATIONS": ids}.get(value, value) for name, value in params.items()}
    links = download_urls(client_for(alice).get(PAGE_URL, params).content.decode())
    assert sorted(links) == ["CSV", "JSON", "LaTeX", "Markdown"]
    api = api_for(alice)
    selector = {name: value for name, value in params.items() if name in ("suite", "evaluations")} or {
        "project": str(suite.project_id)}  # no selector: the current project
    flags = {name: "true" for name in ("include_unfinished", "tokens") if name in params}
    client = client_for(alice)
    for label, format_name in (("CSV", "csv"), ("JSON", "json"), ("Markdown", "md"), ("LaTeX", "latex")):
        downloaded = client.get(links[label])
        expected = api.get(API_URL, {**selector, **flags, "format": format_name})
        assert downloaded.status_code == expected.status_code == 200
        assert downloaded.content == expected.content
        assert downloaded["Content-Disposition"] == expected["Content-Disposition"]
    if "include_unfinished" in params:
        assert b"tiny" in client.get(links["CSV"]).content


def test_the_markdown_download_holds_the_table(client_for, alice, evaluations, suite):
    links = download_urls(client_for(alice).get(PAGE_URL, {"suite": suite.pk}).content.decode())
    markdown = client_for(alice).get(links["Markdown"]).content.decode()
    assert "| run-1 @ 40 | **77.5** [70.1, 84.2] | 30.0 [20.0, 40.0] |" in markdown


@pytest.mark.parametrize("params, field", [({"suite": "abc"}, "suite"), ({"evaluations": "1,x"}, "evaluations"),
                                           ({"suite": "1", "evaluations": "2"}, "suite")])
def test_it_rejects_bad_parameters_naming_the_field(client_for, alice, project, params, field):
    response = client_for(alice).get(PAGE_URL, params)
    assert response.status_code == 400
    assert f"<strong>{field}</strong>" in response.content.decode()


def test_outsiders_get_404_and_no_rows(client_for, charlie, evaluations, suite):
    client = client_for(charlie)
    assert client.get(PAGE_URL, {"suite": suite.pk}).status_code == 404
    assert client.get(PAGE_URL, {"evaluations": evaluations["ours"].pk}).status_code == 404
    own = Project.objects.create(name="Own", slug="own")
    own.add_member(charlie, role="owner")
    response = client.get(PAGE_URL)
    assert response.status_code == 200 and response.context["table"].rows == ()
    assert "run-1" not in response.content.decode()


def test_the_query_count_does_not_grow_with_evaluations(client_for, alice, run, suite, django_assert_num_queries):
    def add_evaluations(count):
        for index in range(count):
            evaluation = EvalRun.objects.create(project=run.project, suite=suite, model=f"m{index}",
                                                status="succeeded", seed=index)
            add_results(evaluation, {"math500": (0.5, 0.4, 0.6, 100.0), "aime24": (0.1, 0.0, 0.2, 90.0)})

    client = client_for(alice)
    add_evaluations(2)
    with django_assert_num_queries(10) as few:
        client.get(PAGE_URL, {"suite": suite.pk})
    add_evaluations(12)
    BenchmarkSuite.objects.create(project=run.project, name="other", benchmarks=[])
    with django_assert_num_queries(len(few.captured_queries)):
        response = client.get(PAGE_URL, {"suite": suite.pk})
    assert len(response.context["table"].rows) == 14
