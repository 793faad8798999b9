"""Benchmark suites and evaluations: lists, details, per-sample rows and cancel."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from webapp.evals.models import BenchmarkSuite, EvalRun
from webapp.pages.run_data import log_tail
from webapp.pages.shortcuts import cancel_job, paginate, render_project_list

SAMPLES_PER_PAGE = 50
RELATED_ROWS = 20
EVAL_RELATED = ("project", "suite", "owner", "checkpoint__run", "checkpoint__variant")
SAMPLE_FILTERS = {"yes": True, "no": False}


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
    context = {
        "evaluation": evaluation,
        "results": in_suite_order(evaluation.results.all(), evaluation.suite),
        "log_tail": log_tail(evaluation.log),
    }
    return render(request, "pages/evaluations/detail.html", context)


@login_required
def evaluation_samples(request: HttpRequest, pk: int) -> HttpResponse:
    """One evaluation's sampled responses, paginated, filtered by ?benchmark= and ?correct=yes|no."""
    evaluation = visible_evaluation(request, pk)
    samples = evaluation.samples.order_by("benchmark", "problem_id", "sample_index")
    benchmark = request.GET.get("benchmark", "")
    if benchmark:
        samples = samples.filter(benchmark=benchmark)
    correct = request.GET.get("correct", "")
    if correct in SAMPLE_FILTERS:
        samples = samples.filter(correct=SAMPLE_FILTERS[correct])
    benchmarks = evaluation.results.order_by("benchmark").values_list("benchmark", flat=True)
    context = {"evaluation": evaluation, "page": paginate(request, samples, per_page=SAMPLES_PER_PAGE),
               "benchmarks": benchmarks, "benchmark": benchmark, "correct": correct}
    return render(request, "pages/evaluations/samples.html", context)


@login_required
@require_POST
def evaluation_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return cancel_job(request, EvalRun.objects, pk, "evaluation-detail")
