"""Benchmark table exports with hostile names: a spreadsheet runs no formula, Markdown and LaTeX show the text."""

from __future__ import annotations

import csv
import io

import pytest

from webapp.evals.models import BenchmarkResult, EvalRun
from webapp.evals.table_renderers import TableCSVRenderer, safe_file_name
from webapp.evals.tables import BenchmarkTable

pytestmark = pytest.mark.django_db

URL = "/api/benchmark-tables/"
HOSTILE_BENCHMARK = "@bench_1|x"
# name typed by a user -> (its CSV cell, its Markdown cell, its LaTeX cell), written out by hand
HOSTILE_NAMES = {
    '=HYPERLINK("http://x","y")': ('\'=HYPERLINK("http://x","y")', '=HYPERLINK("http://x","y")',
                                   '=HYPERLINK("http://x","y")'),
    "=cmd|' /C calc'!A0": ("'=cmd|' /C calc'!A0", r"=cmd\|' /C calc'!A0", r"=cmd\textbar{}' /C calc'!A0"),
    "+1": ("'+1", "+1", "+1"),
    "-2": ("'-2", "-2", "-2"),
    "@SUM(1)": ("'@SUM(1)", "@SUM(1)", "@SUM(1)"),
    "\tX": ("'\tX", "X", "X"),
    "a\rb": ("a b", "a b", "a b"),
    "c\nd": ("c d", "c d", "c d"),
    "**bold**": ("**bold**", r"\*\*bold\*\*", "{*}{*}bold{*}{*}"),
    "a|b": ("a|b", r"a\|b", r"a\textbar{}b"),
    "50% & $x_1$ {y} ~ ^ \\": ("50% & $x_1$ {y} ~ ^ \\", r"50% \& $x\_1$ {y} \~ ^ \\",
                               r"50\% \& \$x\_1\$ \{y\} \textasciitilde{} \textasciicircum{} \textbackslash{}"),
}


@pytest.fixture
def hostile_evaluations(project, suite, alice):
    """One succeeded evaluation per hostile model name, in HOSTILE_NAMES' order, scored on two benchmarks."""
    evaluations = [EvalRun.objects.create(project=project, suite=suite, model=name, owner=alice, status="succeeded")
                   for name in HOSTILE_NAMES]
    BenchmarkResult.objects.bulk_create(
        BenchmarkResult(eval_run=evaluation, benchmark=benchmark, score=0.5, ci_low=-0.0025, ci_high=0.75,
                        mean_response_tokens=100.0, num_problems=10, samples_per_problem=1,
                        metrics={"extraction_policy": "=1+1"})
        for evaluation in evaluations for benchmark in ("math500", HOSTILE_BENCHMARK))
    return evaluations


def export(api, evaluations, format_name: str):
    ids = ",".join(str(evaluation.pk) for evaluation in evaluations)
    response = api.get(URL, {"evaluations": ids, "format": format_name})
    assert response.status_code == 200
    return response


def test_csv_neutralises_formulas_keeps_rows_whole_and_numbers_bare(api_for, alice, hostile_evaluations):
    text = export(api_for(alice), hostile_evaluations, "csv").content.decode()
    assert len(text.splitlines()) == len(HOSTILE_NAMES) + 1  # no CR or LF left inside a name for any reader
    rows = list(csv.reader(io.StringIO(text, newline=""), quoting=csv.QUOTE_NONNUMERIC))  # unquoted -> float
    assert len(rows) == len(HOSTILE_NAMES) + 1
    assert rows[0][2:11] == ["math500 score", "math500 ci_low", "math500 ci_high", "math500 mean_tokens",
                             "math500 num_problems", "math500 samples_per_problem", "math500 extraction_policy",
                             "math500 audit_disagreement", "math500 unit"]
    assert rows[0][11] == f"'{HOSTILE_BENCHMARK} score"
    for evaluation, (name, (csv_cell, _, _)), row in zip(hostile_evaluations, HOSTILE_NAMES.items(), rows[1:]):
        assert row[:2] == [float(evaluation.pk), csv_cell], name
        assert row[2:11] == [50.0, -0.3, 75.0, 100.0, 10.0, 1.0, "'=1+1", "", "percent"]  # -0.3 stays a number


def test_markdown_shows_hostile_names_literally(api_for, alice, hostile_evaluations):
    lines = export(api_for(alice), hostile_evaluations, "md").content.decode().splitlines()
    assert lines[0] == r"| Model | math500 | @bench\_1\|x |"
    assert len(lines) == len(HOSTILE_NAMES) + 2
    for (name, (_, markdown_cell, _)), line in zip(HOSTILE_NAMES.items(), lines[2:]):
        assert line == f"| {markdown_cell} | **50.0** [-0.3, 75.0] | **50.0** [-0.3, 75.0] |", name  # ties: all best


def test_latex_escapes_hostile_names(api_for, alice, hostile_evaluations):
    lines = export(api_for(alice), hostile_evaluations, "latex").content.decode().splitlines()
    assert lines[2] == r"Model & math500 & @bench\_1\textbar{}x \\"
    assert len(lines) == len(HOSTILE_NAMES) + 6  # rules and header
    score = r"\textbf{50.0} {\scriptsize [-0.3, 75.0]}"
    for (name, (_, _, latex_cell)), line in zip(HOSTILE_NAMES.items(), lines[4:]):
        assert line == rf"{latex_cell} & {score} & {score} \\", name


def test_json_keeps_hostile_names_exactly(api_for, alice, hostile_evaluations):
    table = export(api_for(alice), hostile_evaluations, "json").json()
    assert table["columns"] == ["math500", HOSTILE_BENCHMARK]
    assert [row["label"] for row in table["rows"]] == list(HOSTILE_NAMES)
    assert table["rows"][0]["cells"]["math500"]["extraction_policy"] == "=1+1"


def test_the_file_name_cannot_break_out_of_its_header(api_for, alice, project, hostile_evaluations):
    project.slug = 'x"; filename=evil.sh'
    project.save()
    response = api_for(alice).get(URL, {"project": project.pk, "format": "csv"})
    assert response["Content-Disposition"] == 'attachment; filename="benchmark-table-x-filename-evil.sh.csv"'
    table = BenchmarkTable(name='..\r\nSet-Cookie: a="b"', columns=(), rows=(), suite_id=None)
    assert TableCSVRenderer().content_disposition(table) == 'attachment; filename="Set-Cookie-a-b.csv"'
    assert safe_file_name('"\r\n') == "benchmark-table"
