"""Prompt sets: list, detail with paginated prompts, the file upload form and the dataset import."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from common.knobs import config_to_dict

from webapp.pages.forms import PromptSetImportForm, PromptSetUploadForm
from webapp.pages.shortcuts import cancel_job, paginate, render_project_list
from webapp.projects.context import current_project_for
from common.prompt_files import PromptFileError
from webapp.prompts.models import PromptSet, PromptSetImport
from webapp.prompts.services import (
    PromptLimitError, create_prompt_set_from_file, imports_in_request, launch_prompt_import, queue_upload_import,
)

PROMPTS_PER_PAGE = 50
RECENT_IMPORTS = 10


@login_required
def prompt_set_list(request: HttpRequest) -> HttpResponse:
    return render_project_list(
        request, "pages/prompt_sets/list.html",
        lambda project: PromptSet.objects.filter(project=project)
        .select_related("created_by").annotate(prompt_count=Count("prompts")).order_by("-created_at", "-pk"),
    )


@login_required
def prompt_set_detail(request: HttpRequest, pk: int) -> HttpResponse:
    prompt_set = get_object_or_404(
        PromptSet.objects.visible_to(request.user).select_related("project", "created_by"), pk=pk
    )
    page = paginate(request, prompt_set.prompts.order_by("position"), per_page=PROMPTS_PER_PAGE)
    return render(request, "pages/prompt_sets/detail.html", {"prompt_set": prompt_set, "page": page})


@login_required
def prompt_set_upload(request: HttpRequest) -> HttpResponse:
    """Create a prompt set from a JSONL or CSV file; a bad line refuses the whole file."""
    project = current_project_for(request)
    if project is None:
        return render(request, "pages/prompt_sets/upload.html", {"form": None})
    if request.method == "POST":
        form = PromptSetUploadForm(request.POST, request.FILES, project=project)
    else:
        form = PromptSetUploadForm(project=project)
    if form.is_bound and form.is_valid():
        upload = form.cleaned_data["file"]
        if not imports_in_request(upload):  # a worker imports it; its status page shows the progress
            job = queue_upload_import(project, request.user, upload, form.file_format, form.cleaned_data["name"],
                                      form.cleaned_data["description"])
            messages.success(request, f"{upload.name} is queued for import into {job.name}.")
            return redirect("prompt-set-import-detail", pk=job.pk)
        try:
            prompt_set = create_prompt_set_from_file(
                project, form.cleaned_data["name"], upload.read(), form.file_format, user=request.user,
                description=form.cleaned_data["description"], source=upload.name,
            )
        except (PromptFileError, PromptLimitError) as error:
            form.add_error("file", str(error))
        else:
            messages.success(request, f"Imported {prompt_set.prompts.count()} prompts into {prompt_set.name}.")
            return redirect("prompt-set-detail", pk=prompt_set.pk)
    return render(request, "pages/prompt_sets/upload.html", {"form": form})


@login_required
def prompt_set_import(request: HttpRequest) -> HttpResponse:
    """Queue the import of a dataset (hub id or local path) as a new prompt set; show its status page."""
    project = current_project_for(request)
    if project is None:
        return render(request, "pages/prompt_sets/import.html", {"form": None})
    if request.method == "POST":
        form = PromptSetImportForm(request.POST, project=project)
    else:
        form = PromptSetImportForm(project=project)
    if form.is_bound and form.is_valid():
        job = launch_prompt_import(project=project, name=form.cleaned_data["name"], owner=request.user,
                                   description=form.cleaned_data["description"], config=config_to_dict(form.config))
        messages.success(request, f"The import of {job.config['dataset_id']} is queued.")
        return redirect("prompt-set-import-detail", pk=job.pk)
    recent = PromptSetImport.objects.filter(project=project).select_related("prompt_set", "owner")[:RECENT_IMPORTS]
    return render(request, "pages/prompt_sets/import.html", {"form": form, "recent_imports": recent})


@login_required
def prompt_set_import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """An import's status, log and error; the page reloads itself until the import ends."""
    job = get_object_or_404(
        PromptSetImport.objects.visible_to(request.user).select_related("project", "prompt_set", "owner"), pk=pk
    )
    return render(request, "pages/prompt_sets/import_detail.html", {"job": job})


@login_required
@require_POST
def prompt_set_import_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return cancel_job(request, PromptSetImport.objects, pk, "prompt-set-import-detail")
