"""Creating a project and managing its members from the browser (the REST API does the same)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from webapp.projects.context import SESSION_KEY
from webapp.projects.models import Membership, Project
from webapp.projects.services import ROLE_NAMES, LastOwner, can_manage_members, create_project, set_member_role


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = ("name", "slug", "description")
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}
        help_texts = {"slug": "Short unique name used in URLs and the CLI; empty: made from the name."}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["slug"].required = False


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.ROLES, initial="member",
                             error_messages={"invalid_choice": f"%(value)s is not a role: choose {ROLE_NAMES}"})

    def clean_username(self):
        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise forms.ValidationError(f"no user named {name!r}: an administrator creates accounts")
        return user


@login_required
def project_create(request: HttpRequest) -> HttpResponse:
    """A new project owned by the user, then switched to."""
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        project = create_project(request.user, data["name"], data["slug"], data["description"])
        request.session[SESSION_KEY] = project.pk
        messages.success(request, f"Project {project.name} created; you are its owner.")
        return redirect("project-members", pk=project.pk)
    return render(request, "pages/projects/new.html", {"form": form})


@login_required
def project_members(request: HttpRequest, pk: int) -> HttpResponse:
    """The project's members; its owners (and staff) add members or change a member's role."""
    project = get_object_or_404(Project.objects.visible_to(request.user), pk=pk)
    manages = can_manage_members(project, request.user)
    form = MemberForm(request.POST or None)
    if request.method == "POST":
        if not manages:
            raise PermissionDenied("only the project's owners can add members")
        if form.is_valid():
            try:
                membership = set_member_role(project, form.cleaned_data["username"], form.cleaned_data["role"])
            except LastOwner as refused:
                form.add_error("role", str(refused))
            else:
                messages.success(request, f"{membership.user} is now a {membership.role} of {project.name}.")
                return redirect("project-members", pk=project.pk)
    memberships = project.memberships.select_related("user").order_by("user__username")
    return render(request, "pages/projects/members.html",
                  {"project": project, "memberships": memberships, "form": form, "manages": manages})
