"""Benchmark suites and evaluations: lists, details, per-sample rows, cancel, the suite and launch forms."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from common.path_rules import PathRefused
from evaluation.suite_config import BENCHMARKS
from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.evals.services import launch_evaluation, length_curves
from webapp.pages.evaluation_forms import BenchmarkFormSet, EvaluationLaunchForm, SuiteForm
from webapp.pages.evaluation_samples import EvaluationSampleFilterForm, filtered_samples
from webapp.pages.run_data import log_tail
from webapp.pages.run_samples import valid_filters
from webapp.pages.shortcuts import cancel_job, paginate, render_project_list
from webapp.projects.context import current_project_for

SAMPLES_PER_PAGE = 50
RELATED_ROWS = 20
EVAL_RELATED = ("project", "suite", "owner", "checkpoint__run", "checkpoint__variant")
BENCHMARKS_PREFIX = "benchmarks"  # the formset's field prefix: benchmarks-0-max_tokens


@login_required
def suite_list(request: HttpRequest) -> HttpResponse:
    return render_project_list(
        request, "pages/suites/list.html",
        lambda project: BenchmarkSuite.objects.filter(project=project)
        .annotate(evaluation_count=Count("eval_runs")).order_by("name", "pk"),
    )


@login_required
def suite_detail(request: HttpRequest, pk: int) -> HttpResponse:
    suite = get_object_or_404(BenchmarkSuite.objects.visible_to(request.user).select_related("project"), pk=pk)
    evaluations = suite.eval_runs.select_related(*EVAL_RELATED).order_by("-created_at")[:RELATED_ROWS]
    return render(request, "pages/suites/detail.html", {"suite": suite, "evaluations": evaluations})


@login_required
def evaluation_list(request: HttpRequest) -> HttpResponse:
    return render_project_list(
        request, "pages/evaluations/list.html",
        lambda project: EvalRun.objects.filter(project=project).select_related(*EVAL_RELATED)
        .annotate(result_count=Count("results")).order_by("-created_at", "-pk"),
    )


def visible_evaluation(request: HttpRequest, pk: int) -> EvalRun:
    """The evaluation if the user may see it, else 404."""
    return get_object_or_404(EvalRun.objects.visible_to(request.user).select_related(*EVAL_RELATED), pk=pk)


def in_suite_order(results, suite: BenchmarkSuite) -> list:
    """Benchmark results in the suite's order; benchmarks no longer in the suite last."""
    order = {entry.get("benchmark"): index for index, entry in enumerate(suite.benchmarks)}
    return sorted(results, key=lambda result: (order.get(result.benchmark, len(order)), result.benchmark))


@login_required
def evaluation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    evaluation = visible_evaluation(request, pk)
    results = in_suite_order(evaluation.results.all(), evaluation.suite)
    context = {
        "evaluation": evaluation,
        "results": results,
        "length_curves": length_curves(evaluation.pk, [result.benchmark for result in results]),
        "log_tail": log_tail(evaluation.log),
    }
    return render(request, "pages/evaluations/detail.html", context)


@login_required
def evaluation_samples(request: HttpRequest, pk: int) -> HttpResponse:
    """One evaluation's sampled responses, paginated, filtered by ?benchmark=, ?correct=yes|no and
    ?audit=disagree (the samples whose latest grader audit gave another verdict); an unknown value is reported
    and ignored."""
    evaluation = visible_evaluation(request, pk)
    form = EvaluationSampleFilterForm(request.GET or None)
    filters = valid_filters(form)
    samples = filtered_samples(evaluation, filters)
    benchmarks = evaluation.results.order_by("benchmark").values_list("benchmark", flat=True)
    context = {"evaluation": evaluation, "form": form, "page": paginate(request, samples, per_page=SAMPLES_PER_PAGE),
               "benchmarks": benchmarks, "benchmark": filters.get("benchmark", ""),
               "correct": filters.get("correct", ""), "audit": filters.get("audit", "")}
    return render(request, "pages/evaluations/samples.html", context)


@login_required
@require_POST
def evaluation_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return cancel_job(request, EvalRun.objects, pk, "evaluation-detail")


def suite_copy_initial(request: HttpRequest) -> tuple[dict, list[dict]]:
    """Form and row initial values from ?copy=<suite id> (a visible suite), else empty."""
    copy_id = request.GET.get("copy", "")
    source = BenchmarkSuite.objects.visible_to(request.user).filter(pk=copy_id).first() if copy_id.isdigit() else None
    if source is None:
        return {}, []
    return {"name": f"{source.name} (copy)", "description": source.description}, list(source.benchmarks)


def suite_form_page(request: HttpRequest, project, suite: BenchmarkSuite | None) -> HttpResponse:
    """Create a suite (suite None) or edit one in place; a valid POST saves it and shows its page."""
    if request.method == "POST":
        form = SuiteForm(request.POST, project=project, suite=suite)
        formset = BenchmarkFormSet(request.POST, prefix=BENCHMARKS_PREFIX, project=project)
    else:
        initial, entries = ({"name": suite.name, "description": suite.description}, suite.benchmarks) if suite \
            else suite_copy_initial(request)
        form = SuiteForm(initial=initial, project=project, suite=suite)
        formset = BenchmarkFormSet(initial=entries, prefix=BENCHMARKS_PREFIX, project=project)
    if form.is_bound and form.is_valid() and formset.is_valid():
        fields = {"name": form.cleaned_data["name"], "description": form.cleaned_data["description"],
                  "benchmarks": formset.entries}
        if suite is None:
            suite = BenchmarkSuite.objects.create(project=project, **fields)
        else:
            BenchmarkSuite.objects.filter(pk=suite.pk).update(**fields)
        messages.success(request, f"Suite {fields['name']} is saved.")
        return redirect("suite-detail", pk=suite.pk)
    context = {"form": form, "formset": formset, "suite": suite, "benchmark_names": BENCHMARKS}
    return render(request, "pages/suites/form.html", context)


@login_required
def suite_create(request: HttpRequest) -> HttpResponse:
    """A new suite of the current project; ?copy=<id> starts from another suite's benchmarks."""
    project = current_project_for(request)
    if project is None:
        return render(request, "pages/suites/form.html", {"form": None})
    return suite_form_page(request, project, None)


@login_required
def suite_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Edit a suite in place while nothing uses it; once used, changes are saved as a new suite."""
    suite = get_object_or_404(BenchmarkSuite.objects.visible_to(request.user).select_related("project"), pk=pk)
    if suite.usage():
        messages.info(request, f"Suite {suite.name} is used by evaluations or runs, so it stays as it is: "
                               f"your changes are saved as a new suite.")
        return redirect(f"{reverse('suite-create')}?copy={suite.pk}")
    return suite_form_page(request, suite.project, suite)


def launch_initial(request: HttpRequest) -> dict:
    """Prefill the suite and checkpoint from ?suite=<id>&checkpoint=<id>."""
    return {name: int(request.GET[name]) for name in ("suite", "checkpoint") if request.GET.get(name, "").isdigit()}


@login_required
def evaluation_launch(request: HttpRequest) -> HttpResponse:
    """Evaluate a checkpoint or a model on a suite of the current project; shows the queued evaluation."""
    project = current_project_for(request)
    if project is None:
        return render(request, "pages/evaluations/launch.html", {"form": None})
    if request.method == "POST":
        form = EvaluationLaunchForm(request.POST, project=project)
    else:
        form = EvaluationLaunchForm(initial=launch_initial(request), project=project)
    if form.is_bound and form.is_valid():
        try:
            evaluation = launch_evaluation(project=project, owner=request.user, **form.cleaned_data)
        except PathRefused as refused:  # the checkpoint's files were removed since the form's validation
            form.add_error(refused.field, refused.reason)
        else:
            messages.success(request, f"Evaluation {evaluation.pk} is queued.")
            return redirect("evaluation-detail", pk=evaluation.pk)
    return render(request, "pages/evaluations/launch.html", {"form": form})
