"""Long2short variants of a parent run or checkpoint (METHOD.md section 8)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.jobs import Job
from webapp.projects.models import Project, ProjectScopedQuerySet


class Long2ShortMethod(models.TextChoices):
    MERGE = "merge", "Model merging"
    SHORTEST_REJECTION = "shortest_rejection", "Shortest rejection sampling"
    DPO = "dpo", "DPO"
    LONG2SHORT_RL = "long2short_rl", "Long2short RL"


class Long2ShortVariant(Job):
    """A method applied to a parent; produces a checkpoint evaluated like any other."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="variants")
    name = models.CharField(max_length=200)
    parent_run = models.ForeignKey(
        "runs.RLRun", null=True, blank=True, on_delete=models.CASCADE, related_name="variants"
    )
    parent_checkpoint = models.ForeignKey(
        "runs.Checkpoint", null=True, blank=True, on_delete=models.CASCADE, related_name="child_variants"
    )
    method = models.CharField(max_length=30, choices=Long2ShortMethod.choices)
    parameters = models.JSONField(default=dict, blank=True, help_text="The method's resolved config.")
    evaluation_suite = models.ForeignKey(
        "evals.BenchmarkSuite", null=True, blank=True, on_delete=models.SET_NULL, related_name="variants"
    )
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="variants")

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_method_display()})"
