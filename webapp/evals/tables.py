"""Benchmark tables (models by benchmark, like the Kimi k1.5 report's tables 2 and 3) and their four formats.

`load_table` picks the evaluations a user may see and builds the table in at most three queries;
`table_to_json`, `table_to_csv`, `table_to_markdown` and `table_to_latex` are pure functions of the
table, shared by the REST export and the browser pages.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from django.db.models import Prefetch
from django.http import Http404
from django.utils.text import slugify

from webapp.evals.benchmark_labels import suite_labels
from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun
from webapp.jobs import JobStatus
from webapp.projects.models import Project

TABLE_RELATED = ("suite", "checkpoint__run", "checkpoint__variant")
FILE_NAME_IDS = 10  # evaluation ids spelled out in a file name; more are counted


@dataclass(frozen=True)
class TableCell:
    """One model's result on one benchmark: score and interval in percent (one decimal), or for an lm-eval metric
    on its own scale in that metric's unit (`unit` names it: "bleu_max"); tokens whole."""

    score: float
    ci_low: float | None
    ci_high: float | None
    mean_tokens: int | None
    num_problems: int
    samples_per_problem: int
    best: bool = False  # the column's top score (ties included), marked when the column has two scores or more
    extraction_policy: str = ""  # how final answers were extracted; "" where none are (code, lm-eval)
    audit_samples: int | None = None  # the latest grader audit: samples graded again (None: never audited)
    audit_disagreements: int | None = None
    audit_disagreement: float | None = None  # disagreements / audited samples, percent with one decimal
    unit: str = "percent"


@dataclass(frozen=True)
class TableRow:
    evaluation_id: int
    label: str
    status: str
    cells: tuple[TableCell | None, ...]  # aligned with BenchmarkTable.columns; None where no result


@dataclass(frozen=True)
class BenchmarkTable:
    name: str  # names the selection in file names: "benchmark-table-suite-3-math"
    columns: tuple[str, ...]  # benchmark names ("benchmark (suite)" where several suites scored one)
    rows: tuple[TableRow, ...]  # one per evaluation
    suite_id: int | None  # the suite every row shares, if any


# ---------------------------------------------------------------- numbers


def _round_half_up(value: float, places: str) -> Decimal:
    """Round as a reader expects (77.45 -> 77.5), from the float's shortest decimal form."""
    return Decimal(repr(value)).quantize(Decimal(places), rounding=ROUND_HALF_UP)


def percent(fraction: float | None, digits: int = 1) -> float | None:
    """A 0-1 fraction as a percentage with `digits` decimals, halves up (0.7745 -> 77.5; 0.4125 -> 41.3, where
    float formatting gives 41.2); None when missing or not finite. Pages and exports both round with it."""
    if fraction is None or not math.isfinite(fraction):
        return None
    return float(_round_half_up(fraction, f"1e-{digits + 2}") * 100)


def whole_tokens(tokens: float | None) -> int | None:
    """A mean token count rounded to a whole token (800.5 -> 801); None when missing or not finite."""
    if tokens is None or not math.isfinite(tokens):
        return None
    return int(_round_half_up(tokens, "1"))


# ---------------------------------------------------------------- selecting and building


def load_table(user, *, evaluation_ids: Sequence[int] | None = None, suite_id: int | None = None,
               project_id: int | None = None, include_unfinished: bool = False) -> BenchmarkTable:
    """The table of the chosen evaluations the user may see (at most one selector; none: all visible).

    An evaluation, suite or project the user cannot see raises Http404, like one that does not exist.
    Only succeeded evaluations count unless include_unfinished.
    """
    evaluations, name = _select_evaluations(user, evaluation_ids, suite_id, project_id)
    if not include_unfinished:
        evaluations = [evaluation for evaluation in evaluations if evaluation.status == JobStatus.SUCCEEDED]
    return build_table(evaluations, name)


def _select_evaluations(user, evaluation_ids, suite_id, project_id) -> tuple[list[EvalRun], str]:
    """The selected visible evaluations (results prefetched) in row order, and the selection's file name."""
    visible = EvalRun.objects.visible_to(user).select_related(*TABLE_RELATED).prefetch_related(
        Prefetch("results", queryset=BenchmarkResult.objects.order_by("benchmark"))
    )
    if evaluation_ids is not None:
        evaluation_ids = list(dict.fromkeys(evaluation_ids))  # first mention decides the row's place
        found = {evaluation.pk: evaluation for evaluation in visible.filter(pk__in=evaluation_ids)}
        missing = [pk for pk in evaluation_ids if pk not in found]
        if missing:
            raise Http404(f"evaluation {missing[0]} not found")
        return [found[pk] for pk in evaluation_ids], _ids_name(evaluation_ids)
    chronological = visible.order_by("created_at", "pk")
    if suite_id is not None:
        suite = BenchmarkSuite.objects.visible_to(user).filter(pk=suite_id).first()
        if suite is None:
            raise Http404(f"suite {suite_id} not found")
        name = "-".join(filter(None, ["benchmark-table-suite", str(suite.pk), slugify(suite.name)]))
        return list(chronological.filter(suite=suite)), name
    if project_id is not None:
        project = Project.objects.visible_to(user).filter(pk=project_id).first()
        if project is None:
            raise Http404(f"project {project_id} not found")
        return list(chronological.filter(project=project)), f"benchmark-table-{project.slug}"
    return list(chronological), "benchmark-table-all"


def _ids_name(evaluation_ids: Sequence[int]) -> str:
    shown = "-".join(str(pk) for pk in evaluation_ids[:FILE_NAME_IDS])
    more = len(evaluation_ids) - FILE_NAME_IDS
    return f"benchmark-table-evaluations-{shown}" + (f"-and-{more}-more" if more > 0 else "")


def build_table(evaluations: Sequence[EvalRun], name: str = "benchmark-table") -> BenchmarkTable:
    """One row per evaluation (in the given order), one column per benchmark and suite ("math500 (long)" where
    several suites scored a benchmark: other token limits or sample counts are not one column to rank);
    needs results prefetched."""
    labels = suite_labels((result.benchmark, evaluation.suite_id, evaluation.suite.name)
                          for evaluation in evaluations for result in evaluation.results.all())
    columns = _column_order(evaluations, labels)
    results = [{labels[(result.benchmark, evaluation.suite_id)]: result for result in evaluation.results.all()}
               for evaluation in evaluations]
    best = {benchmark: _best_score([by_benchmark.get(benchmark) for by_benchmark in results]) for benchmark in columns}
    labels = _unique_labels(evaluations)
    rows = tuple(
        TableRow(evaluation.pk, label, evaluation.status,
                 tuple(_cell(by_benchmark.get(benchmark), best[benchmark]) for benchmark in columns))
        for evaluation, label, by_benchmark in zip(evaluations, labels, results)
    )
    suites = {evaluation.suite_id for evaluation in evaluations}
    return BenchmarkTable(name, tuple(columns), rows, suites.pop() if len(suites) == 1 else None)


def shown(result: BenchmarkResult, value: float | None) -> float | None:
    """A score (or an interval end) as tables show it: a fraction in percent, a raw metric's value as it is, one
    decimal, halves up."""
    if result.score_is_fraction or value is None or not math.isfinite(value):
        return percent(value)
    return float(_round_half_up(value, "0.1"))


def _cell(result: BenchmarkResult | None, best_score: float | None) -> TableCell | None:
    score = shown(result, result.score) if result is not None else None
    if score is None:
        return None
    return TableCell(score=score, ci_low=shown(result, result.ci_low), ci_high=shown(result, result.ci_high),
                     mean_tokens=whole_tokens(result.mean_response_tokens), num_problems=result.num_problems,
                     samples_per_problem=result.samples_per_problem, best=score == best_score,
                     extraction_policy=result.extraction_policy, audit_samples=result.audit_samples,
                     audit_disagreements=result.audit_disagreements,
                     audit_disagreement=percent(result.audit_disagreement_rate), unit=result.score_unit)


def _best_score(results: Iterable[BenchmarkResult | None]) -> float | None:
    """The column's best displayed score (the lowest where lower is better: a perplexity), or None when fewer
    than two models have one (nothing to compare)."""
    present = [result for result in results if result is not None]
    if len({(result.score_unit, result.higher_is_better) for result in present}) > 1:
        return None  # one metric read two ways in one column (results stored before the scale was): no ranking
    scores = [score for score in (shown(result, result.score) for result in present) if score is not None]
    if len(scores) < 2:
        return None
    return max(scores) if present[0].higher_is_better else min(scores)


def _suite_positions(suite: BenchmarkSuite) -> dict[str, int]:
    """Benchmark name -> its index in the suite's ordered list."""
    positions: dict[str, int] = {}
    for entry in suite.benchmarks if isinstance(suite.benchmarks, list) else []:
        if isinstance(entry, dict):
            positions.setdefault(entry.get("benchmark"), len(positions))
    return positions


def _column_order(evaluations: Sequence[EvalRun], labels: dict[tuple[str, int], str]) -> list[str]:
    """Column labels of the benchmarks with a result: the suite's order when every row shares one suite, else
    first seen. Each row is read in its own suite's order; benchmarks missing from a suite come after its own.
    """
    seen: dict[str, None] = {}
    for evaluation in evaluations:
        positions = _suite_positions(evaluation.suite)
        benchmarks = sorted((result.benchmark for result in evaluation.results.all()),
                            key=lambda benchmark: (positions.get(benchmark, len(positions)), benchmark))
        seen.update(dict.fromkeys(labels[(benchmark, evaluation.suite_id)] for benchmark in benchmarks))
    order = list(seen)
    if len({evaluation.suite_id for evaluation in evaluations}) == 1:
        positions = _suite_positions(evaluations[0].suite)
        order.sort(key=lambda benchmark: positions.get(benchmark, len(positions)))  # stable: extras keep first-seen
    return order


def row_label(evaluation: EvalRun) -> str:
    """The checkpoint's label, as pages and forms show it (Checkpoint.label: "run-1 @ 40", "short (DPO)",
    "demo/iteration-000006"), else the model string: "Qwen/Qwen2.5-7B"."""
    checkpoint = evaluation.checkpoint
    if checkpoint is not None and (checkpoint.written_by_worker or checkpoint.path.strip("/")):
        return checkpoint.label
    return evaluation.model or f"evaluation {evaluation.pk}"


def _unique_labels(evaluations: Sequence[EvalRun]) -> list[str]:
    """Row labels; a label two rows share gets the evaluation id: "run-1 @ 40 (evaluation 7)"."""
    labels = [row_label(evaluation) for evaluation in evaluations]
    shared = {label for label, count in Counter(labels).items() if count > 1}
    return [f"{label} (evaluation {evaluation.pk})" if label in shared else label
            for label, evaluation in zip(labels, evaluations)]


# ---------------------------------------------------------------- formats


def table_to_json(table: BenchmarkTable) -> dict:
    """The table as plain data: numbers stay numbers; a row's cells by benchmark, a missing one left out."""
    return {
        "suite": table.suite_id,
        "columns": list(table.columns),
        "rows": [
            {"evaluation": row.evaluation_id, "label": row.label, "status": row.status,
             "cells": {benchmark: _cell_json(cell) for benchmark, cell in zip(table.columns, row.cells)
                       if cell is not None}}
            for row in table.rows
        ],
    }


def _cell_json(cell: TableCell) -> dict:
    return {"score": cell.score, "ci_low": cell.ci_low, "ci_high": cell.ci_high, "mean_tokens": cell.mean_tokens,
            "num_problems": cell.num_problems, "samples_per_problem": cell.samples_per_problem, "best": cell.best,
            "extraction_policy": cell.extraction_policy, "audit_samples": cell.audit_samples,
            "audit_disagreements": cell.audit_disagreements, "audit_disagreement": cell.audit_disagreement,
            "unit": cell.unit}


CSV_FIELDS = ("score", "ci_low", "ci_high", "mean_tokens", "num_problems", "samples_per_problem", "extraction_policy",
              "audit_disagreement", "unit")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs a cell starting so as a formula (OWASP)


def table_to_csv(table: BenchmarkTable) -> str:
    """One header row ("evaluation", "model", then per benchmark "<benchmark> score|ci_low|ci_high|mean_tokens|
    num_problems|samples_per_problem|extraction_policy|audit_disagreement|unit" (audit_disagreement: percent of
    audited samples; unit: "percent" or a raw lm-eval metric's name)); empty = missing.

    Numbers are written bare, text quoted and spreadsheet-safe (csv_text).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(["evaluation", "model", *(csv_text(f"{benchmark} {field}") for benchmark in table.columns
                                               for field in CSV_FIELDS)])
    for row in table.rows:
        values = []
        for cell in row.cells:
            values += [""] * len(CSV_FIELDS) if cell is None else [_csv_value(getattr(cell, field))
                                                                   for field in CSV_FIELDS]
        writer.writerow([row.evaluation_id, csv_text(row.label), *values])
    return buffer.getvalue()


def csv_text(text: str) -> str:
    """Text a spreadsheet shows as typed: on one line, a formula start ("=1+1", " -2") behind a quote ("'=1+1")."""
    one_line = " ".join(text.splitlines())  # a CR or LF splits the row in line-based readers, even when quoted
    if text.startswith(FORMULA_STARTS) or one_line.lstrip().startswith(FORMULA_STARTS):
        return "'" + one_line
    return one_line


def _csv_value(value: str | float | None) -> str | float:
    """Our numbers stay numbers (a delta of -0.25 is no formula); text goes through csv_text; None is empty."""
    if value is None:
        return ""
    return csv_text(value) if isinstance(value, str) else value


def _text(value) -> str:
    return "" if value is None else str(value)


def _tokens_text(cell: TableCell | None) -> str:
    return "" if cell is None else _text(cell.mean_tokens)


def _has_interval(cell: TableCell) -> bool:
    return cell.ci_low is not None and cell.ci_high is not None


def table_to_markdown(table: BenchmarkTable, *, tokens: bool = False) -> str:
    """A pipe table: cells "77.5 [70.1, 84.2]" (score, 95% CI), the best in bold; tokens adds "<b> tokens" columns."""
    header = ["Model"]
    for benchmark in map(markdown_escape, table.columns):
        header += [benchmark, f"{benchmark} tokens"] if tokens else [benchmark]
    lines = [_markdown_line(header), "|---|" + "---:|" * (len(header) - 1)]
    for row in table.rows:
        values = [markdown_escape(row.label)]
        for cell in row.cells:
            values += [_markdown_score(cell), _tokens_text(cell)] if tokens else [_markdown_score(cell)]
        lines.append(_markdown_line(values))
    return "\n".join(lines) + "\n"


def _markdown_score(cell: TableCell | None) -> str:
    if cell is None:
        return ""
    score = f"**{cell.score:.1f}**" if cell.best else f"{cell.score:.1f}"
    return f"{score} [{cell.ci_low:.1f}, {cell.ci_high:.1f}]" if _has_interval(cell) else score


def _markdown_line(values: Sequence[str]) -> str:
    return "| " + " | ".join(values) + " |"


MARKDOWN_SPECIALS = frozenset("\\|*_`[]<>#~&")  # ~ strikes through and & starts an entity in GitHub's Markdown


def markdown_escape(text: str) -> str:
    """Text a pipe-table cell shows literally ("**x**" stays "**x**"): specials backslashed, whitespace one space."""
    return "".join("\\" + character if character in MARKDOWN_SPECIALS else character
                   for character in " ".join(text.split()))


LATEX_SPECIALS = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#",
    "$": r"\$", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",  # pdflatex's default font prints ¡ ¿ —
    "[": "{[}", "]": "{]}", "*": "{*}",  # a row starting "[" or "*" would be read as the row before's \\[gap] or \\*
}


def latex_escape(text: str) -> str:
    """Text safe inside a tabular cell: LaTeX's special characters escaped, whitespace runs made one space."""
    return "".join(LATEX_SPECIALS.get(character, character) for character in " ".join(text.split()))


def table_to_latex(table: BenchmarkTable, *, tokens: bool = False) -> str:
    """A booktabs tabular: cells "77.5 {\\scriptsize [70.1, 84.2]}", the best per column in \\textbf.

    With tokens, each benchmark spans a Score and a Tokens column under a \\cmidrule.
    """
    benchmarks = [latex_escape(benchmark) for benchmark in table.columns]
    if tokens:
        spans = [rf"\multicolumn{{2}}{{c}}{{{benchmark}}}" for benchmark in benchmarks]
        rules = [rf"\cmidrule(lr){{{2 * index + 2}-{2 * index + 3}}}" for index in range(len(benchmarks))]
        subheads = ["Score", "Tokens"] * len(benchmarks)
        header = [_latex_line(["", *spans]), " ".join(rules), _latex_line(["Model", *subheads])]
    else:
        header = [_latex_line(["Model", *benchmarks])]
    column_spec = "l" + "c" * len(benchmarks) * (2 if tokens else 1)
    lines = [rf"\begin{{tabular}}{{{column_spec}}}", r"\toprule", *header, r"\midrule"]
    for row in table.rows:
        values = [latex_escape(row.label)]
        for cell in row.cells:
            values += [_latex_score(cell), _tokens_text(cell)] if tokens else [_latex_score(cell)]
        lines.append(_latex_line(values))
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def _latex_line(values: Sequence[str]) -> str:
    return " & ".join(values) + r" \\"


def _latex_score(cell: TableCell | None) -> str:
    if cell is None:
        return ""
    score = rf"\textbf{{{cell.score:.1f}}}" if cell.best else f"{cell.score:.1f}"
    return rf"{score} {{\scriptsize [{cell.ci_low:.1f}, {cell.ci_high:.1f}]}}" if _has_interval(cell) else score
