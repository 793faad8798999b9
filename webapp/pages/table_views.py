"""Benchmark tables page: models by benchmark, with downloads that are the REST export itself."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse

from webapp.evals.api import BenchmarkTableQuerySerializer
from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.evals.table_renderers import TABLE_FORMATS
from webapp.evals.tables import TABLE_RELATED, load_table
from webapp.projects.context import current_project_for

PICKER_EVALUATIONS = 50
FORMAT_LABELS = {"csv": "CSV", "json": "JSON", "md": "Markdown", "latex": "LaTeX"}


def filled_query(query: QueryDict) -> QueryDict:
    """The query string without empty values (a form's '(all)' choice sends suite=)."""
    filled = QueryDict(mutable=True)
    for name in query:
        values = [value for value in query.getlist(name) if value.strip()]
        if values:
            filled.setlist(name, values)
    return filled


def table_selection(options: dict, current_project_id: int | None) -> dict:
    """load_table's selector: the chosen evaluations, suite or project, else the current project."""
    if options.get("evaluations"):
        return {"evaluation_ids": options["evaluations"]}
    if options.get("suite"):
        return {"suite_id": options["suite"]}
    project_id = options.get("project") or current_project_id
    return {"project_id": project_id} if project_id else {}


SELECTOR_PARAMETERS = {"evaluation_ids": "evaluations", "suite_id": "suite", "project_id": "project"}


def export_query(selection: dict, options: dict) -> QueryDict:
    """The REST export's parameters for the same table."""
    query = QueryDict(mutable=True)
    for key, value in selection.items():
        query[SELECTOR_PARAMETERS[key]] = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    for flag in ("include_unfinished", "tokens"):
        if options.get(flag):
            query[flag] = "true"
    return query


def download_links(query: QueryDict) -> list[tuple[str, str]]:
    """(label, URL of GET /api/benchmark-tables/?...&format=...) for each export format."""
    links = []
    for name in TABLE_FORMATS:
        with_format = query.copy()
        with_format["format"] = name
        links.append((FORMAT_LABELS.get(name, name), f"{reverse('benchmark-table-list')}?{with_format.urlencode()}"))
    return links


@login_required
def benchmark_tables(request: HttpRequest) -> HttpResponse:
    """Choose a suite or evaluations (default: the current project); the table and its downloads."""
    project = current_project_for(request)
    query = BenchmarkTableQuerySerializer(data=filled_query(request.GET))
    context = {"errors": None, "table": None, "options": {}, "suites": [], "evaluations": []}
    if project is not None:
        context["suites"] = BenchmarkSuite.objects.filter(project=project).only("pk", "name")
        context["evaluations"] = (EvalRun.objects.filter(project=project).select_related(*TABLE_RELATED)
                                  .order_by("-created_at", "-pk")[:PICKER_EVALUATIONS])
    if not query.is_valid():
        context["errors"] = query.errors
        return render(request, "pages/tables/tables.html", context, status=400)
    options = query.validated_data
    context["options"] = options
    selection = table_selection(options, project.pk if project else None)
    if selection:
        context["table"] = load_table(request.user, include_unfinished=options["include_unfinished"], **selection)
        context["downloads"] = download_links(export_query(selection, options))
    return render(request, "pages/tables/tables.html", context)
