"""Benchmark tables: models by benchmark, exported by GET /api/benchmark-tables/ as JSON, CSV, Markdown and LaTeX."""

from __future__ import annotations

import csv
import io

import pytest

from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
from webapp.evals.tables import build_table, latex_escape, load_table, percent, row_label, whole_tokens
from webapp.runs.models import Checkpoint

pytestmark = pytest.mark.django_db

URL = "/api/benchmark-tables/"
PAPER_BENCHMARKS = ["aime24", "math500", "lm-eval:mmlu_pro"]  # the suite's order, not alphabetical


def add_results(eval_run: EvalRun, rows: dict) -> None:
    """rows: benchmark -> (score, ci_low, ci_high, mean tokens, problems, samples per problem)."""
    BenchmarkResult.objects.bulk_create(
        BenchmarkResult(eval_run=eval_run, benchmark=benchmark, score=score, ci_low=low, ci_high=high,
                        mean_response_tokens=tokens, num_problems=problems, samples_per_problem=samples)
        for benchmark, (score, low, high, tokens, problems, samples) in rows.items()
    )


@pytest.fixture
def paper_suite(project):
    return BenchmarkSuite.objects.create(project=project, name="Paper table", benchmarks=[
        {"benchmark": name, "samples_per_problem": 1} for name in PAPER_BENCHMARKS])


@pytest.fixture
def checkpoint(run):
    run.name = "long_cot #1"  # LaTeX specials in a label
    run.save()
    return Checkpoint.objects.create(project=run.project, run=run, iteration=40, path="/tmp/ckpt-40")


@pytest.fixture
def evaluations(project, paper_suite, checkpoint, alice):
    """Two succeeded evaluations (one lacks mmlu_pro) and a running one, oldest first."""
    ours = EvalRun.objects.create(project=project, suite=paper_suite, checkpoint=checkpoint, owner=alice,
                                  status="succeeded")
    add_results(ours, {"aime24": (0.775, 0.701, 0.842, 1234.4, 30, 8),
                       "math500": (0.9, 0.88, 0.92, 800.5, 500, 4),
                       "lm-eval:mmlu_pro": (0.4, None, None, None, 100, 1)})
    baseline = EvalRun.objects.create(project=project, suite=paper_suite, model="Qwen/Qwen2.5-7B", owner=alice,
                                      status="succeeded")
    add_results(baseline, {"aime24": (0.5, 0.4, 0.6, 2000.0, 30, 8), "math500": (0.95, 0.93, 0.97, 900.0, 500, 4)})
    running = EvalRun.objects.create(project=project, suite=paper_suite, model="tiny", owner=alice, status="running")
    add_results(running, {"math500": (0.1, 0.05, 0.15, 50.0, 500, 4)})
    return {"ours": ours, "baseline": baseline, "running": running}


def cell(score, low, high, tokens, problems, samples, best):
    return {"score": score, "ci_low": low, "ci_high": high, "mean_tokens": tokens, "num_problems": problems,
            "samples_per_problem": samples, "best": best, "extraction_policy": "", "audit_samples": None,
            "audit_disagreements": None, "audit_disagreement": None, "unit": "percent"}


def test_json_holds_the_numbers_in_percent_in_the_suite_order(api_for, alice, evaluations, paper_suite):
    response = api_for(alice).get(URL, {"suite": paper_suite.pk})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    ours, baseline = evaluations["ours"].pk, evaluations["baseline"].pk
    assert response.json() == {
        "suite": paper_suite.pk,
        "columns": PAPER_BENCHMARKS,
        "rows": [
            {"evaluation": ours, "label": "long_cot #1 @ 40", "status": "succeeded", "cells": {
                "aime24": cell(77.5, 70.1, 84.2, 1234, 30, 8, True),
                "math500": cell(90.0, 88.0, 92.0, 801, 500, 4, False),
                "lm-eval:mmlu_pro": cell(40.0, None, None, None, 100, 1, False)}},
            {"evaluation": baseline, "label": "Qwen/Qwen2.5-7B", "status": "succeeded", "cells": {
                "aime24": cell(50.0, 40.0, 60.0, 2000, 30, 8, False),
                "math500": cell(95.0, 93.0, 97.0, 900, 500, 4, True)}},  # no mmlu_pro: left out, not zero
        ],
    }


def test_unfinished_evaluations_count_only_when_asked(api_for, alice, evaluations, paper_suite):
    api = api_for(alice)
    default = api.get(URL, {"suite": paper_suite.pk}).json()
    assert evaluations["running"].pk not in [row["evaluation"] for row in default["rows"]]
    included = api.get(URL, {"suite": paper_suite.pk, "include_unfinished": "1"}).json()
    running_row = included["rows"][-1]
    assert (running_row["label"], running_row["status"]) == ("tiny", "running")
    assert running_row["cells"] == {"math500": cell(10.0, 5.0, 15.0, 50, 500, 4, False)}
    # An unfinished evaluation named explicitly is left out too (not refused).
    named = api.get(URL, {"evaluations": f"{evaluations['running'].pk}"})
    assert named.status_code == 200 and named.json()["rows"] == []


def test_csv_has_one_header_row_and_nine_columns_per_benchmark(api_for, alice, evaluations, paper_suite):
    response = api_for(alice).get(URL, {"suite": paper_suite.pk, "format": "csv"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    fields = ("score", "ci_low", "ci_high", "mean_tokens", "num_problems", "samples_per_problem",
              "extraction_policy", "audit_disagreement", "unit")
    assert rows[0] == ["evaluation", "model", *(f"{benchmark} {field}" for benchmark in
                                                ("aime24", "math500", "lm-eval:mmlu_pro") for field in fields)]
    assert rows[1] == [str(evaluations["ours"].pk), "long_cot #1 @ 40", "77.5", "70.1", "84.2", "1234", "30", "8",
                       "", "", "percent", "90.0", "88.0", "92.0", "801", "500", "4", "", "", "percent", "40.0", "",
                       "", "", "100", "1", "", "", "percent"]
    assert rows[2] == [str(evaluations["baseline"].pk), "Qwen/Qwen2.5-7B", "50.0", "40.0", "60.0", "2000", "30",
                       "8", "", "", "percent", "95.0", "93.0", "97.0", "900", "500", "4", "", "", "percent",
                       *[""] * 9]
    assert len(rows) == 3


def test_markdown_is_a_pipe_table_with_intervals_and_the_best_in_bold(api_for, alice, evaluations, paper_suite):
    response = api_for(alice).get(URL, {"suite": paper_suite.pk, "format": "md"})
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response.content.decode().splitlines() == [
        r"| Model | aime24 | math500 | lm-eval:mmlu\_pro |",
        "|---|---:|---:|---:|",
        r"| long\_cot \#1 @ 40 | **77.5** [70.1, 84.2] | 90.0 [88.0, 92.0] | 40.0 |",  # the name escaped, not the score
        "| Qwen/Qwen2.5-7B | 50.0 [40.0, 60.0] | **95.0** [93.0, 97.0] |  |",
    ]


def test_markdown_adds_a_tokens_column_per_benchmark_when_asked(api_for, alice, evaluations, paper_suite):
    response = api_for(alice).get(URL, {"suite": paper_suite.pk, "format": "md", "tokens": "1"})
    lines = response.content.decode().splitlines()
    assert lines[0] == ("| Model | aime24 | aime24 tokens | math500 | math500 tokens | lm-eval:mmlu\\_pro "
                        "| lm-eval:mmlu\\_pro tokens |")
    assert lines[1] == "|---|---:|---:|---:|---:|---:|---:|"
    assert lines[3] == "| Qwen/Qwen2.5-7B | 50.0 [40.0, 60.0] | 2000 | **95.0** [93.0, 97.0] | 900 |  |  |"


def test_latex_is_a_booktabs_tabular_escaped_with_the_best_in_bold(api_for, alice, evaluations, paper_suite):
    response = api_for(alice).get(URL, {"suite": paper_suite.pk, "format": "latex"})
    assert response["Content-Type"] == "application/x-latex; charset=utf-8"
    assert response.content.decode().splitlines() == [
        r"\begin{tabular}{lccc}",
        r"\toprule",
        r"Model & aime24 & math500 & lm-eval:mmlu\_pro \\",
        r"\midrule",
        r"long\_cot \#1 @ 40 & \textbf{77.5} {\scriptsize [70.1, 84.2]} & 90.0 {\scriptsize [88.0, 92.0]} & 40.0 \\",
        r"Qwen/Qwen2.5-7B & 50.0 {\scriptsize [40.0, 60.0]} & \textbf{95.0} {\scriptsize [93.0, 97.0]} &  \\",
        r"\bottomrule",
        r"\end{tabular}",
    ]


def test_latex_with_tokens_spans_each_benchmark_over_score_and_tokens(api_for, alice, evaluations, paper_suite):
    response = api_for(alice).get(URL, {"evaluations": evaluations["baseline"].pk, "format": "latex", "tokens": "1"})
    assert response.content.decode().splitlines()[:6] == [
        r"\begin{tabular}{lcccc}",
        r"\toprule",
        r" & \multicolumn{2}{c}{aime24} & \multicolumn{2}{c}{math500} \\",
        r"\cmidrule(lr){2-3} \cmidrule(lr){4-5}",
        r"Model & Score & Tokens & Score & Tokens \\",
        r"\midrule",
    ]
    # One model alone: nothing to compare, nothing in bold.
    assert response.content.decode().splitlines()[6] == (
        r"Qwen/Qwen2.5-7B & 50.0 {\scriptsize [40.0, 60.0]} & 2000 & 95.0 {\scriptsize [93.0, 97.0]} & 900 \\")


def test_latex_escape_covers_every_special_character():
    assert latex_escape("a_b 50% & #1 $x$ {y} ~^\\") == (
        r"a\_b 50\% \& \#1 \$x\$ \{y\} \textasciitilde{}\textasciicircum{}\textbackslash{}")


@pytest.mark.parametrize(("params", "content_type", "disposition"), [
    ({"format": "json"}, "application/json", 'inline; filename="benchmark-table-suite-{suite}-paper-table.json"'),
    ({"format": "csv"}, "text/csv", 'attachment; filename="benchmark-table-suite-{suite}-paper-table.csv"'),
    ({"format": "md"}, "text/markdown", 'attachment; filename="benchmark-table-suite-{suite}-paper-table.md"'),
    ({"format": "latex"}, "application/x-latex",
     'attachment; filename="benchmark-table-suite-{suite}-paper-table.tex"'),
])
def test_each_format_names_its_file(api_for, alice, evaluations, paper_suite, params, content_type, disposition):
    response = api_for(alice).get(URL, {"suite": paper_suite.pk, **params})
    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == content_type
    assert response["Content-Disposition"] == disposition.format(suite=paper_suite.pk)


@pytest.mark.parametrize(("accept", "content_type"), [
    ("text/csv", "text/csv"), ("text/markdown", "text/markdown"), ("application/x-latex", "application/x-latex"),
    ("application/json", "application/json"), ("*/*", "application/json"),
])
def test_the_accept_header_chooses_the_format_too(api_for, alice, evaluations, accept, content_type):
    response = api_for(alice).get(URL, {"project": evaluations["ours"].project_id}, HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].split(";")[0] == content_type
    assert response["Content-Disposition"].endswith(f'filename="benchmark-table-reasoning.{content_type.split("/")[1]}"'
                                                    .replace("x-latex", "tex").replace("markdown", "md"))


def test_evaluations_keep_the_given_order_and_shared_labels_get_the_id(api_for, alice, evaluations, checkpoint):
    again = EvalRun.objects.create(project=checkpoint.project, suite=evaluations["ours"].suite, checkpoint=checkpoint,
                                   seed=1, status="succeeded")
    add_results(again, {"math500": (0.91, 0.89, 0.93, 790.0, 500, 4)})
    ours, baseline = evaluations["ours"].pk, evaluations["baseline"].pk
    response = api_for(alice).get(URL, {"evaluations": f"{again.pk},{baseline},{ours},{again.pk}"})
    assert response["Content-Disposition"] == (
        f'inline; filename="benchmark-table-evaluations-{again.pk}-{baseline}-{ours}.json"')
    table = response.json()
    assert [(row["evaluation"], row["label"]) for row in table["rows"]] == [
        (again.pk, f"long_cot #1 @ 40 (evaluation {again.pk})"), (baseline, "Qwen/Qwen2.5-7B"),
        (ours, f"long_cot #1 @ 40 (evaluation {ours})")]
    assert table["columns"] == PAPER_BENCHMARKS  # one shared suite: its order, not the order first seen
    assert table["rows"][0]["cells"] == {"math500": cell(91.0, 89.0, 93.0, 790, 500, 4, False)}


def test_runs_of_several_suites_take_benchmarks_in_first_seen_order(api_for, alice, project, evaluations):
    other = BenchmarkSuite.objects.create(project=project, name="code", benchmarks=[
        {"benchmark": "livecodebench"}, {"benchmark": "math500"}])
    coder = EvalRun.objects.create(project=project, suite=other, model="coder", status="succeeded")
    add_results(coder, {"math500": (0.3, 0.2, 0.4, 10.0, 500, 1), "livecodebench": (0.2, 0.1, 0.3, 20.0, 50, 1)})
    response = api_for(alice).get(URL, {"evaluations": f"{coder.pk},{evaluations['baseline'].pk}"})
    table = response.json()
    assert table["suite"] is None
    # math500 was scored by both suites: a column each, ranked apart (1 sample vs 4: not one column to rank)
    assert table["columns"] == ["livecodebench", "math500 (code)", "aime24", "math500 (Paper table)"]
    assert {name: value["score"] for name, value in table["rows"][1]["cells"].items()} == {
        "math500 (Paper table)": 95.0, "aime24": 50.0}
    assert table["rows"][0]["cells"]["math500 (code)"]["score"] == 30.0


def test_without_a_selector_the_table_holds_every_evaluation_the_user_sees(api_for, bob, charlie, evaluations):
    ours, baseline = evaluations["ours"].pk, evaluations["baseline"].pk
    response = api_for(bob).get(URL)
    assert [row["evaluation"] for row in response.json()["rows"]] == [ours, baseline]
    assert response["Content-Disposition"] == 'inline; filename="benchmark-table-all.json"'
    assert api_for(charlie).get(URL).json() == {"suite": None, "columns": [], "rows": []}


def test_an_outsider_gets_404_for_what_they_cannot_see(api_for, charlie, evaluations, paper_suite, project):
    api = api_for(charlie)
    for params in ({"evaluations": evaluations["ours"].pk}, {"suite": paper_suite.pk}, {"project": project.pk},
                   {"evaluations": 999999}, {"suite": paper_suite.pk, "format": "csv"}):
        response = api.get(URL, params)
        assert response.status_code == 404, params
        assert response["Content-Type"] == "application/json"
    # One unseen id among seen ones refuses the whole table, and says which.
    response = api_for(evaluations["ours"].owner).get(URL, {"evaluations": f"{evaluations['ours'].pk},999999"})
    assert response.status_code == 404
    assert response.json() == {"detail": "evaluation 999999 not found"}


def test_anonymous_requests_are_refused(client, evaluations):
    assert client.get(URL).status_code in (401, 403)


@pytest.mark.parametrize(("params", "parameter"), [
    ({"evaluations": "1,x"}, "evaluations"), ({"evaluations": ","}, "evaluations"),
    ({"evaluations": "-3"}, "evaluations"), ({"evaluations": "99999999999999999999"}, "evaluations"),
    ({"suite": "abc"}, "suite"), ({"project": "0"}, "project"),
    ({"include_unfinished": "maybe"}, "include_unfinished"), ({"tokens": "lots"}, "tokens"),
    ({"format": "xlsx"}, "format"), ({"suite": "1", "project": "1"}, "suite"),
])
def test_a_bad_parameter_is_a_400_that_names_it(api_for, alice, params, parameter):
    response = api_for(alice).get(URL, params)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert parameter in response.json()


def test_an_error_answers_in_json_even_when_a_file_was_asked(api_for, alice):
    response = api_for(alice).get(URL, {"evaluations": "x", "format": "latex"})
    assert response.status_code == 400
    assert response.json() == {"evaluations": ["'x' is not an id: give positive whole numbers separated by commas."]}
    assert "Content-Disposition" not in response


def test_the_query_count_does_not_grow_with_runs(django_assert_num_queries, api_for, alice, project, paper_suite,
                                                  checkpoint):
    def add_evaluations(count):
        for index in range(count):
            eval_run = EvalRun.objects.create(project=project, suite=paper_suite, checkpoint=checkpoint,
                                              status="succeeded", seed=index)
            add_results(eval_run, {name: (0.5, 0.4, 0.6, 100.0, 10, 1) for name in PAPER_BENCHMARKS})

    api = api_for(alice)
    add_evaluations(2)
    for params, queries in (({"suite": paper_suite.pk}, 3), ({"project": project.pk}, 3), ({}, 2)):
        with django_assert_num_queries(queries):
            assert len(api.get(URL, params).json()["rows"]) == 2
    add_evaluations(6)
    ids = ",".join(str(pk) for pk in EvalRun.objects.values_list("pk", flat=True))
    for params, queries in (({"suite": paper_suite.pk}, 3), ({"evaluations": ids}, 2)):
        with django_assert_num_queries(queries):
            assert len(api.get(URL, {**params, "format": "latex"}).content.splitlines()) == 6 + 8  # rules + rows


def test_the_api_root_and_the_browsable_api_list_the_tables(client_for, alice, evaluations):
    client = client_for(alice)
    assert "benchmark-tables" in client.get("/api/", HTTP_ACCEPT="application/json").json()
    page = client.get(URL, HTTP_ACCEPT="text/html")
    assert page.status_code == 200 and b"Benchmark Table" in page.content and b"long_cot #1 @ 40" in page.content


def test_load_table_serves_the_pages_too(alice, evaluations, paper_suite):
    table = load_table(alice, suite_id=paper_suite.pk, include_unfinished=True)
    assert [row.label for row in table.rows] == ["long_cot #1 @ 40", "Qwen/Qwen2.5-7B", "tiny"]
    assert table.name == f"benchmark-table-suite-{paper_suite.pk}-paper-table"


def test_build_table_of_nothing_is_empty():
    table = build_table([])
    assert (table.columns, table.rows, table.suite_id) == ((), (), None)


def test_scores_round_half_up_to_one_decimal_percent():
    assert [percent(value) for value in (0.7745, 0.77449, 0.001, 1.0, 0.0)] == [77.5, 77.4, 0.1, 100.0, 0.0]
    assert (percent(None), percent(float("nan")), whole_tokens(800.5), whole_tokens(None)) == (None, None, 801, None)


def test_pages_show_the_percent_the_export_holds():
    from webapp.pages.templatetags.mirrorlab import percent as page_percent

    for fraction in (0.4125, 0.0125, 0.2875, 99 / 240):  # float formatting rounds these halves to even
        assert page_percent(fraction) == f"{percent(fraction):.1f}%"
    assert (page_percent(0.4125), page_percent(0.125, 0), page_percent(None), page_percent("")) == (
        "41.3%", "13%", "", "")


def test_labels_fall_back_to_the_variant_the_path_or_the_model(project):
    assert row_label(EvalRun(pk=5, model="Qwen/Qwen2.5-7B")) == "Qwen/Qwen2.5-7B"
    assert row_label(EvalRun(pk=5, checkpoint=Checkpoint(path="/models/qwen-7b/"))) == "qwen-7b"
    assert row_label(EvalRun(pk=5)) == "evaluation 5"


def test_the_schema_serializers_describe_the_json(api_for, alice, evaluations, paper_suite):
    from webapp.evals.api import BenchmarkTableCellSerializer, BenchmarkTableRowSerializer, BenchmarkTableSerializer

    table = api_for(alice).get(URL, {"suite": paper_suite.pk}).json()
    row = table["rows"][0]
    assert set(BenchmarkTableSerializer().fields) == set(table)
    assert set(BenchmarkTableRowSerializer().fields) == set(row)
    assert set(BenchmarkTableCellSerializer().fields) == set(row["cells"]["aime24"])


def test_an_lm_eval_metric_on_its_own_scale_is_shown_as_it_is_and_lower_can_be_better(project, paper_suite, alice):
    """BLEU (0-100) once showed as 2562.0 "percent" and a perplexity's highest, the worst, was marked best."""
    from webapp.evals.tables import build_table

    runs = []
    for model, bleu, perplexity in (("a", 25.62, 12.34), ("b", 12.0, 9.87)):
        evaluation = EvalRun.objects.create(project=project, suite=paper_suite, model=model, owner=alice,
                                            status="succeeded")
        BenchmarkResult.objects.bulk_create([
            BenchmarkResult(eval_run=evaluation, benchmark="lm-eval:truthfulqa_gen", score=bleu, ci_low=bleu - 5,
                            ci_high=bleu + 5, num_problems=2, metrics={
                                "score_scale": "raw", "higher_is_better": True, "main_metric": "bleu_max,none"}),
            BenchmarkResult(eval_run=evaluation, benchmark="lm-eval:wikitext", score=perplexity, num_problems=2,
                            metrics={"score_scale": "raw", "higher_is_better": False,
                                     "main_metric": "word_perplexity,none"}),
            BenchmarkResult(eval_run=evaluation, benchmark="math500", score=0.5 if model == "a" else 0.25,
                            num_problems=2)])
        runs.append(EvalRun.objects.prefetch_related("results").select_related("suite").get(pk=evaluation.pk))
    table = build_table(runs)
    cells = {column: [row.cells[index] for row in table.rows] for index, column in enumerate(table.columns)}
    bleu, perplexity, math = (cells["lm-eval:truthfulqa_gen"], cells["lm-eval:wikitext"], cells["math500"])
    assert [(c.score, c.ci_low, c.unit, c.best) for c in bleu] == [(25.6, 20.6, "bleu_max", True),
                                                                     (12.0, 7.0, "bleu_max", False)]
    assert [(c.score, c.unit, c.best) for c in perplexity] == [(12.3, "word_perplexity", False),
                                                              (9.9, "word_perplexity", True)]
    assert [(c.score, c.unit, c.best) for c in math] == [(50.0, "percent", True), (25.0, "percent", False)]
