"""Compare page: overlay the curves of chosen runs and variants; its data also as JSON."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from webapp.long2short.models import Long2ShortVariant
from webapp.pages.compare_data import COMPARE_METRICS, PICKER_ROWS, X_AXES, compare_form, compare_payload
from webapp.projects.context import current_project_for
from webapp.runs.models import RLRun


def payload_or_404(request: HttpRequest, options: dict) -> dict:
    """The chart data; a run or variant the user cannot see is a 404, like one that does not exist."""
    try:
        return compare_payload(request.user, options)
    except LookupError as error:
        raise Http404(str(error)) from None


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    """The picker (the current project's latest runs and variants) and the overlaid charts."""
    form = compare_form(request.GET)
    project = current_project_for(request)
    valid = form.is_valid()
    context = {
        "form": form,
        "chart_data": payload_or_404(request, form.cleaned_data) if valid else None,
        "options": form.cleaned_data if valid else {"runs": [], "variants": [], "x": "iteration", "smooth": 0.0,
                                                    "metric": []},
        "x_axes": X_AXES,
        "metric_names": COMPARE_METRICS,
        "picker_runs": RLRun.objects.filter(project=project).only("pk", "name", "status", "created_at")
        .order_by("-created_at", "-pk")[:PICKER_ROWS] if project else [],
        "picker_variants": Long2ShortVariant.objects.filter(project=project)
        .only("pk", "name", "method", "status", "created_at").order_by("-created_at", "-pk")[:PICKER_ROWS]
        if project else [],
    }
    return render(request, "pages/compare/compare.html", context, status=200 if valid else 400)


@login_required
def compare_data(request: HttpRequest) -> JsonResponse:
    """The same chart data as JSON; a refused parameter is a 400 naming it."""
    form = compare_form(request.GET)
    if not form.is_valid():
        return JsonResponse({name: list(errors) for name, errors in form.errors.items()}, status=400)
    return JsonResponse(payload_or_404(request, form.cleaned_data))
