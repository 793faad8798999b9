"""Small helpers shared by the page views: pagination, the current project's lists, cancelling jobs."""

from __future__ import annotations

from typing import Callable

from django.contrib import messages
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from webapp.projects.context import current_project_for
from webapp.projects.models import Project

LIST_PAGE_SIZE = 25


def paginate(request: HttpRequest, queryset: QuerySet, per_page: int = LIST_PAGE_SIZE) -> Page:
    """The page named by ?page= (the last page when out of range, the first when not a number)."""
    return Paginator(queryset, per_page).get_page(request.GET.get("page"))


def render_project_list(
    request: HttpRequest, template: str, rows_of: Callable[[Project], QuerySet]
) -> HttpResponse:
    """Render a paginated list of the current project's rows, or the no-project hint."""
    project = current_project_for(request)
    page = paginate(request, rows_of(project)) if project else None
    return render(request, template, {"page": page})


CANCEL_MESSAGES = {
    "cancelled": "Cancelled before it started.",
    "cancel requested": "Cancel requested: the worker stops after the current iteration.",
    "already finished": "Nothing to cancel: it has already finished.",
}


def cancel_job(request: HttpRequest, jobs: QuerySet, pk: int, detail_url_name: str) -> HttpResponse:
    """POST: cancel a visible job row (queued at once, running between iterations), then show it."""
    job = get_object_or_404(jobs.visible_to(request.user), pk=pk)
    outcome = job.request_cancel()
    level = messages.WARNING if outcome == "already finished" else messages.SUCCESS
    messages.add_message(request, level, CANCEL_MESSAGES[outcome])
    return redirect(detail_url_name, pk=job.pk)
