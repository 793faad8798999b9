"""Home page and the project switcher."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from webapp.evals.models import EvalRun
from webapp.projects.context import SESSION_KEY, current_project_for
from webapp.projects.models import Project
from webapp.runs.models import RLRun

RECENT_ROWS = 10


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The current project's recent runs and evaluations, or a hint to ask for a project."""
    project = current_project_for(request)
    context = {}
    if project:
        context["runs"] = RLRun.objects.filter(project=project).select_related("prompt_set", "owner")[:RECENT_ROWS]
        context["evaluations"] = (
            EvalRun.objects.filter(project=project)
            .select_related("suite", "owner", "checkpoint__run", "checkpoint__variant")[:RECENT_ROWS]
        )
    return render(request, "pages/home.html", context)


@login_required
@require_POST
def switch_project(request: HttpRequest) -> HttpResponse:
    """Store the chosen project in the session; 404 unless the user may see it."""
    chosen = request.POST.get("project", "")
    if not chosen.isdigit():
        raise Http404("No such project.")
    project = Project.objects.visible_to(request.user).filter(pk=int(chosen)).first()
    if project is None:
        raise Http404("No such project.")
    request.session[SESSION_KEY] = project.pk
    messages.success(request, f"Switched to project {project.name}.")
    next_url = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return redirect(next_url)
    return redirect("home")
