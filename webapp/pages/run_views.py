"""RL runs: list, launch form, live detail page, status JSON, sample browser, cancel and resume."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from common.knobs import config_to_dict
from webapp.evals.models import EvalRun
from webapp.pages.forms import RunLaunchForm
from webapp.pages.run_charts import benchmark_series, chart_series
from webapp.pages.run_data import (
    config_rows, duration_text, eta_seconds, log_tail, sections_key, status_payload, warmup_text, with_section_counts,
)
from webapp.pages.run_samples import SampleFilterForm, filtered_samples, valid_filters
from webapp.pages.shortcuts import cancel_job, paginate, render_project_list
from webapp.projects.context import current_project_for
from webapp.runs.models import RLRun
from webapp.runs.services import launch_run, resume_run

METRIC_ROWS_PER_PAGE = 50
SAMPLES_PER_PAGE = 25
RELATED_ROWS = 20


def visible_run(request: HttpRequest, pk: int, section_counts: bool = False) -> RLRun:
    """The run if the user may see it, else 404; with `section_counts`, annotated by with_section_counts."""
    runs = RLRun.objects.visible_to(request.user).select_related("project", "prompt_set", "evaluation_suite", "owner")
    return get_object_or_404(with_section_counts(runs) if section_counts else runs, pk=pk)


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
    return render_project_list(
        request, "pages/runs/list.html",
        lambda project: RLRun.objects.filter(project=project).select_related("prompt_set", "owner")
        .order_by("-created_at", "-pk"),
    )


@login_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = visible_run(request, pk, section_counts=True)
    context = {
        "run": run,
        "sections_key": sections_key(run),
        "config_rows": config_rows(run.config),
        "chart_data": chart_series(run),
        "benchmark_data": benchmark_series(run),
        "eta": duration_text(eta_seconds(run)),
        "warmup": warmup_text(run),
        "metrics_page": paginate(request, run.metrics.order_by("-iteration"), per_page=METRIC_ROWS_PER_PAGE),
        "log_tail": log_tail(run.log),
        "checkpoints": run.checkpoints.order_by("-created_at")[:RELATED_ROWS],
        "evaluations": EvalRun.objects.filter(checkpoint__run=run)
        .select_related("suite", "checkpoint__run").order_by("-created_at")[:RELATED_ROWS],
    }
    return render(request, "pages/runs/detail.html", context)


@login_required
def run_status(request: HttpRequest, pk: int) -> JsonResponse:
    """The run's status, progress, log tail and chart series, polled by the run page."""
    return JsonResponse(status_payload(visible_run(request, pk, section_counts=True)))


@login_required
def run_samples(request: HttpRequest, pk: int) -> HttpResponse:
    """The run's stored training samples, paginated, filtered by correctness, iteration and length."""
    run = visible_run(request, pk)
    form = SampleFilterForm(request.GET or None)
    samples = filtered_samples(run, valid_filters(form))
    context = {"run": run, "form": form, "page": paginate(request, samples, per_page=SAMPLES_PER_PAGE)}
    return render(request, "pages/runs/samples.html", context)


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return cancel_job(request, RLRun.objects, pk, "run-detail")


@login_required
@require_POST
def run_resume(request: HttpRequest, pk: int) -> HttpResponse:
    """POST: re-queue a failed or cancelled run; it continues from its newest checkpoint."""
    run = visible_run(request, pk)
    previous = run.get_status_display().lower()
    if resume_run(run, request.user):
        messages.success(request, f"Run {run.name} is queued again: it resumes from its newest checkpoint.")
    else:
        messages.warning(request, f"Only a failed or cancelled run can be resumed; this run is {previous}.")
    return redirect("run-detail", pk=run.pk)


def launch_initial(request: HttpRequest) -> dict[str, Any]:
    """Prefill from ?copy=<run id> (a visible run's name, data and config) and ?prompt_set=<id>."""
    initial: dict[str, Any] = {}
    copy_id = request.GET.get("copy", "")
    source = RLRun.objects.visible_to(request.user).filter(pk=copy_id).first() if copy_id.isdigit() else None
    if source is not None:
        initial = {**source.config, "name": f"{source.name} (copy)", "description": source.description,
                   "prompt_set": source.prompt_set_id, "evaluation_suite": source.evaluation_suite_id}
    if request.GET.get("prompt_set", "").isdigit():
        initial["prompt_set"] = int(request.GET["prompt_set"])
    return initial


@login_required
def run_launch(request: HttpRequest) -> HttpResponse:
    """The launch form generated from RLConfig; a valid form queues a run and shows its page."""
    project = current_project_for(request)
    if project is None:
        return render(request, "pages/runs/launch.html", {"form": None})
    if request.method == "POST":
        form = RunLaunchForm(request.POST, project=project)
    else:
        form = RunLaunchForm(initial=launch_initial(request), project=project)
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        run = launch_run(
            project=project, name=data["name"], description=data["description"], prompt_set=data["prompt_set"],
            evaluation_suite=data["evaluation_suite"], owner=request.user, config=config_to_dict(form.config),
        )
        messages.success(request, f"Run {run.name} is queued.")
        return redirect("run-detail", pk=run.pk)
    return render(request, "pages/runs/launch.html", {"form": form})
