"""Long2short pages: the dashboard of a parent's variants, the variant list, detail, launch and cancel."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from common.knobs import config_to_dict, describe_knobs
from common.path_rules import PathRefused
from training.config import LONG2SHORT_CONFIGS
from webapp.evals.models import EvalRun
from webapp.long2short.models import Long2ShortMethod, Long2ShortVariant, RecordKind
from webapp.long2short.services import launch_variant
from webapp.pages.run_data import log_tail
from webapp.pages.long2short_data import dashboard_data, parent_choices
from webapp.pages.shortcuts import cancel_job, paginate, render_project_list
from webapp.pages.variant_forms import VariantLaunchForm, chosen_method
from webapp.projects.context import current_project_for
from webapp.runs.models import RLRun

RELATED_ROWS = 20
RECORDS_PER_PAGE = 20


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """?parent=<run id>: accuracy versus tokens per benchmark for the run and its variants, and the efficiency table."""
    project = current_project_for(request)
    chosen = request.GET.get("parent", "")
    context = {"parents": parent_choices(project), "parent": None}
    if chosen:
        if not chosen.isdigit():
            raise Http404("parent: not a run id")
        parent = get_object_or_404(RLRun.objects.visible_to(request.user).only("pk", "name", "project_id"),
                                   pk=int(chosen))
        data = dashboard_data(parent)
        context.update(parent=parent, variants=data["variants"], table=data["table"],
                       chart_data={"parent": data["parent"], "charts": data["charts"]})
    return render(request, "pages/long2short/dashboard.html", context)


@login_required
def variant_list(request: HttpRequest) -> HttpResponse:
    return render_project_list(
        request, "pages/long2short/list.html",
        lambda project: Long2ShortVariant.objects.filter(project=project)
        .select_related("owner", "parent_run", "parent_checkpoint__run", "parent_checkpoint__variant")
        .order_by("-created_at", "-pk"),
    )


def parameter_rows(variant: Long2ShortVariant) -> list[dict]:
    """(name, value, help) of the method's knobs in config order; stored keys the config lacks come last."""
    config_class = LONG2SHORT_CONFIGS.get(variant.method)
    knobs = {knob["name"]: knob for knob in describe_knobs(config_class)} if config_class else {}
    names = [name for name in knobs if name in variant.parameters] + sorted(set(variant.parameters) - set(knobs))
    return [{"name": name, "value": variant.parameters[name], "help": knobs.get(name, {}).get("help", "")}
            for name in names]


def records_context(request: HttpRequest, variant: Long2ShortVariant) -> dict:
    """The variant's kept samples or pairs, one page (?page=) of one kind (?kind=); two bounded queries."""
    kind = request.GET.get("kind", "")
    records = variant.records.order_by("id")
    if kind in RecordKind.values:
        records = records.filter(kind=kind)
    return {"records_page": paginate(request, records, per_page=RECORDS_PER_PAGE),
            "record_kind": kind if kind in RecordKind.values else "", "record_kinds": RecordKind.choices}


@login_required
def variant_detail(request: HttpRequest, pk: int) -> HttpResponse:
    variants = Long2ShortVariant.objects.visible_to(request.user).select_related(
        "project", "owner", "parent_run", "parent_checkpoint__run", "parent_checkpoint__variant", "evaluation_suite")
    variant = get_object_or_404(variants, pk=pk)
    context = {
        "variant": variant,
        "parameter_rows": parameter_rows(variant),
        "checkpoints": variant.checkpoints.order_by("-created_at")[:RELATED_ROWS],
        "evaluations": EvalRun.objects.filter(checkpoint__variant=variant).select_related("suite", "checkpoint")
        .prefetch_related("results").order_by("-created_at")[:RELATED_ROWS],
        "log_tail": log_tail(variant.log),
        "dashboard_parent": variant.parent_run_id or (variant.parent_checkpoint and variant.parent_checkpoint.run_id),
        **records_context(request, variant),
    }
    return render(request, "pages/long2short/detail.html", context)


@login_required
@require_POST
def variant_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return cancel_job(request, Long2ShortVariant.objects, pk, "variant-detail")


def launch_initial(request: HttpRequest) -> dict:
    """Prefill the parent from ?parent_run= or ?parent_checkpoint=."""
    return {name: int(request.GET[name]) for name in ("parent_run", "parent_checkpoint")
            if request.GET.get(name, "").isdigit()}


@login_required
def variant_launch(request: HttpRequest) -> HttpResponse:
    """The launch form for ?method= (its knobs generated from the method's config); a valid form queues a variant."""
    project = current_project_for(request)
    if project is None:
        return render(request, "pages/long2short/launch.html", {"form": None})
    if request.method == "POST":
        form = VariantLaunchForm(request.POST, project=project, method=chosen_method(request.POST))
    else:
        form = VariantLaunchForm(initial=launch_initial(request), project=project, method=chosen_method(request.GET))
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        try:
            variant = launch_variant(
                project=project, name=data["name"], method=data["method"], parent_run=data["parent_run"],
                parent_checkpoint=data["parent_checkpoint"], evaluation_suite=data["evaluation_suite"],
                parameters=config_to_dict(form.config), owner=request.user,
            )
        except PathRefused as refused:  # a chosen checkpoint's files were removed since the form's validation
            form.add_error(refused.field if refused.field in form.fields else None, refused.reason)
        else:
            messages.success(request, f"Variant {variant.name} is queued.")
            return redirect("variant-detail", pk=variant.pk)
    methods = [(value, label) for value, label in Long2ShortMethod.choices]
    return render(request, "pages/long2short/launch.html",
                  {"form": form, "methods": methods, "method": form.fields["method"].initial})
