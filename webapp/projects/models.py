"""Projects (workspaces) and their members: every other object belongs to a project."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ProjectQuerySet(models.QuerySet):
    def visible_to(self, user) -> "ProjectQuerySet":
        """Projects the user may see: all for staff, their memberships otherwise."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.all()
        return self.filter(memberships__user=user)


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True, help_text="Short unique name used in URLs and the CLI.")
    description = models.TextField(blank=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="projects")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def add_member(self, user, role: str = "member") -> "Membership":
        """Add (or re-role) a member."""
        membership, _ = Membership.objects.update_or_create(project=self, user=user, defaults={"role": role})
        return membership


class Membership(models.Model):
    ROLES = [("owner", "Owner"), ("member", "Member")]

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=ROLES, default="member")
    joined_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


class ProjectScopedQuerySet(models.QuerySet):
    """Base queryset of every project-owned model: `visible_to(user)` is the one permission filter."""

    project_path = "project"

    def visible_to(self, user) -> models.QuerySet:
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self.all()
        return self.filter(**{f"{self.project_path}__memberships__user": user})
