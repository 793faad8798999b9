"""Creating a project and changing its members: one code path for the pages and the REST API."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.text import slugify

from webapp.projects.models import Membership, Project

ROLE_NAMES = ", ".join(role for role, _label in Membership.ROLES)


SLUG_ATTEMPTS = 5


class LastOwner(ValueError):
    """A role change that would leave the project without an owner."""


def create_project(user, name: str, slug: str = "", description: str = "") -> Project:
    """A new project with `user` as its owner; an empty slug is made from the name (unique, see free_slug; a
    concurrent create that took it first makes this one try the next)."""
    attempts = 1 if slug else SLUG_ATTEMPTS
    for attempt in range(1, attempts + 1):
        try:
            return _create_owned(user, name, slug or free_slug(name), description)
        except IntegrityError:
            if attempt == attempts:
                raise


def _create_owned(user, name: str, slug: str, description: str) -> Project:
    with transaction.atomic():
        project = Project.objects.create(name=name, slug=slug, description=description)
        project.add_member(user, role="owner")
    return project


def set_member_role(project: Project, user, role: str) -> Membership:
    """Add `user` to the project with `role`, or change their role; LastOwner when that would leave the project
    with no owner (its memberships locked meanwhile, so two owners demoting each other cannot both go through)."""
    with transaction.atomic():
        owners = set(project.memberships.select_for_update().filter(role="owner").values_list("user_id", flat=True))
        if role != "owner" and owners == {user.pk}:
            raise LastOwner(f"{user} is the project's only owner: make another member owner first")
        return project.add_member(user, role=role)


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
