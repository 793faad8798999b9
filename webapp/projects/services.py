"""Creating a project and changing its members: one code path for the pages and the REST API."""

from __future__ import annotations

from django.db import transaction
from django.utils.text import slugify

from webapp.projects.models import Membership, Project

ROLE_NAMES = ", ".join(role for role, _label in Membership.ROLES)


def create_project(user, name: str, slug: str = "", description: str = "") -> Project:
    """A new project with `user` as its owner; an empty slug is made from the name (unique, see free_slug)."""
    with transaction.atomic():
        project = Project.objects.create(name=name, slug=slug or free_slug(name), description=description)
        project.add_member(user, role="owner")
    return project


def free_slug(name: str) -> str:
    """The name as a slug (`My RL project` -> `my-rl-project`), with -2, -3, ... when another project has it."""
    base = slugify(name)[:90] or "project"
    slug, number = base, 1
    while Project.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base}-{number}"
    return slug


def can_manage_members(project: Project, user) -> bool:
    """Owners of the project, and staff."""
    return user.is_staff or project.memberships.filter(user=user, role="owner").exists()
