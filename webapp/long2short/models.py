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
    started_from = models.ForeignKey(
        "runs.Checkpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The checkpoint the method started from: the chosen parent checkpoint, else the parent run's "
                  "last when the variant ran (the baseline it is compared with).")
    start_reason = models.TextField(blank=True, help_text="Why the variant started from that checkpoint.")
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


class RecordKind(models.TextChoices):
    KEPT_SAMPLE = "kept_sample", "Kept sample"
    PAIR = "pair", "Preference pair"


class RecordQuerySet(ProjectScopedQuerySet):
    project_path = "variant__project"


class Long2ShortRecord(models.Model):
    """The data a variant's method built: a kept sample (shortest rejection) or a preference pair (DPO).

    A kept sample fills `chosen` (the SFT target); a pair also fills `rejected` and why it was rejected.
    """

    variant = models.ForeignKey(Long2ShortVariant, on_delete=models.CASCADE, related_name="records")
    kind = models.CharField(max_length=20, choices=RecordKind.choices)
    prompt_id = models.CharField(max_length=200)
    problem = models.TextField(blank=True)
    chosen = models.TextField(blank=True, help_text="The kept response, or the pair's chosen response.")
    chosen_tokens = models.PositiveIntegerField()
    rejected = models.TextField(blank=True)
    rejected_tokens = models.PositiveIntegerField(null=True, blank=True)
    rejected_reason = models.CharField(max_length=30, blank=True, help_text="wrong_longer or correct_too_long.")
    extra = models.JSONField(default=dict, blank=True, help_text="Samples drawn and correct, for kept samples.")

    objects = RecordQuerySet.as_manager()

    class Meta:
        ordering = ["variant", "id"]
        indexes = [models.Index(fields=["variant", "kind", "id"], name="variant_record_idx")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of prompt {self.prompt_id}"
