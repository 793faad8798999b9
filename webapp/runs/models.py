"""RL runs, their per-iteration metrics, stored training samples and their checkpoints."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from django.conf import settings
from django.db import models

from webapp.jobs import Job, JobStatus
from webapp.projects.models import Project, ProjectScopedQuerySet

RESUMABLE_STATUSES = (JobStatus.FAILED, JobStatus.CANCELLED)
ITERATION_FOLDER = re.compile(r"iteration-0*(\d+)")  # a run's checkpoint folder (training/checkpoint.py's layout)


class RLRun(Job):
    """One RL run: a validated config (training.config.RLConfig) and its lifecycle."""

    retry_hint = "Resume it to try again: it goes on from its newest checkpoint."

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rl_runs")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    prompt_set = models.ForeignKey("prompts.PromptSet", on_delete=models.PROTECT, related_name="rl_runs")
    evaluation_suite = models.ForeignKey(
        "evals.BenchmarkSuite", null=True, blank=True, on_delete=models.SET_NULL, related_name="rl_runs"
    )
    config = models.JSONField(help_text="The resolved RLConfig: every knob, defaults filled in.")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="rl_runs")
    current_iteration = models.PositiveIntegerField(default=0)
    total_iterations = models.PositiveIntegerField(default=0)
    warmup_progress = models.JSONField(
        default=dict, blank=True,
        help_text="Warm-up SFT while it runs: step, steps (in all), loss, started and updated (Unix seconds).")

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["project", "-created_at"])]

    def __str__(self) -> str:
        return self.name

    @property
    def is_resumable(self) -> bool:
        """Failed and cancelled runs can be re-queued; the engine resumes from the newest checkpoint."""
        return self.status in RESUMABLE_STATUSES

    def has_trained(self) -> bool:
        """Whether the run has a checkpoint (the warm-up's, iteration 0, included) or a recorded iteration: it
        resumes from those, with the recipe and prompts they were trained with."""
        return self.current_iteration > 0 or self.checkpoints.exists()


class RunScopedQuerySet(ProjectScopedQuerySet):
    project_path = "run__project"


class IterationMetric(models.Model):
    """What one RL iteration measured (report figure 5 is drawn from these rows)."""

    run = models.ForeignKey(RLRun, on_delete=models.CASCADE, related_name="metrics")
    iteration = models.PositiveIntegerField()
    # Null when no response finished in the iteration (all still growing under partial rollouts).
    train_accuracy = models.FloatField(null=True, blank=True, help_text="Fraction of trained responses judged correct.")
    mean_response_length = models.FloatField(null=True, blank=True, help_text="Mean response length, tokens.")
    p95_response_length = models.FloatField(null=True, blank=True,
                                            help_text="95th percentile of response length, tokens.")
    loss = models.FloatField(null=True, blank=True)
    kl = models.FloatField(null=True, blank=True, help_text="KL of the updated policy to the iteration's start.")
    tokens_generated = models.BigIntegerField(default=0)
    tokens_reused = models.BigIntegerField(default=0, help_text="Tokens carried over from partial rollouts.")
    seconds = models.FloatField(default=0.0)
    extra = models.JSONField(default=dict, blank=True, help_text="Further metrics, by name.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RunScopedQuerySet.as_manager()

    class Meta:
        ordering = ["run", "iteration"]
        constraints = [models.UniqueConstraint(fields=["run", "iteration"], name="one_metric_row_per_iteration")]


class TrainingSample(models.Model):
    """One response the policy was trained on, kept for the run page's sample browser."""

    # No single-column index: the composite indexes below all start with run.
    run = models.ForeignKey(RLRun, on_delete=models.CASCADE, related_name="samples", db_index=False)
    iteration = models.PositiveIntegerField()
    prompt_id = models.CharField(max_length=200, help_text="The prompt row's id.")
    problem = models.TextField()
    sample_index = models.PositiveIntegerField(default=0, help_text="Position within the problem's group of k.")
    response = models.TextField(blank=True)
    reward = models.FloatField(help_text="Total reward trained on: correctness + length reward - repeat penalty.")
    correct = models.BooleanField()
    response_tokens = models.PositiveIntegerField()
    truncated = models.BooleanField(default=False, help_text="Hit max_response_tokens.")
    repeated = models.BooleanField(default=False, help_text="Ended early by repeat detection.")

    objects = RunScopedQuerySet.as_manager()

    class Meta:
        ordering = ["run", "-iteration", "id"]
        indexes = [
            # The browser's default order (newest iteration first) and its iteration filter.
            models.Index(fields=["run", "-iteration", "id"], name="training_sample_iteration_idx"),
            models.Index(fields=["run", "correct", "-iteration"], name="training_sample_correct_idx"),
            models.Index(fields=["run", "response_tokens"], name="training_sample_length_idx"),
        ]


class CheckpointQuerySet(ProjectScopedQuerySet):
    pass


class Checkpoint(models.Model):
    """Saved weights (safetensors, Hugging Face layout) of a run or a long2short variant."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="checkpoints")
    run = models.ForeignKey(RLRun, null=True, blank=True, on_delete=models.CASCADE, related_name="checkpoints")
    variant = models.ForeignKey(
        "long2short.Long2ShortVariant", null=True, blank=True, on_delete=models.CASCADE, related_name="checkpoints"
    )
    iteration = models.PositiveIntegerField(null=True, blank=True)
    path = models.CharField(max_length=500, help_text="Directory of the checkpoint.")
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    files_removed_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When the run's worker removed the checkpoint's files (keep_last_checkpoints); the row stays, with "
                  "the evaluations that measured it.")

    objects = CheckpointQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["run", "iteration"])]

    @property
    def written_by_worker(self) -> bool:
        """A checkpoint of a run or a variant, saved by its worker (else registered by a user)."""
        return self.run_id is not None or self.variant_id is not None

    def files_removed_error(self) -> str | None:
        """Why the checkpoint can no longer be evaluated or used by a variant (its files were removed), or None."""
        if self.files_removed_at is None:
            return None
        return (f"checkpoint #{self.pk} ({self}): its files were removed by keep_last_checkpoints on "
                f"{self.files_removed_at:%Y-%m-%d %H:%M}; choose a checkpoint whose files are kept")

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        """How pages, forms, tables and exports name it: "run-1 @ 40" (its run's or variant's name and iteration);
        registered by path, its folder: "demo/iteration-000006" (the run folder above `checkpoints/` and the
        iteration folder), "qwen-7b @ 3" (any other folder, with the iteration when one was given)."""
        source = self.run or self.variant
        if source is None:
            return folder_label(self.path, self.iteration) or f"checkpoint #{self.pk}"
        return f"{source} @ {self.iteration}" if self.iteration is not None else str(source)


def folder_label(path: str, iteration: int | None) -> str:
    """A registered checkpoint's name from its folder, "" for an empty path; the iteration is added unless the
    folder's name already says it (`iteration-000006`)."""
    parts = [part for part in PurePosixPath(path.replace("\\", "/")).parts if part != "/"]
    if not parts:
        return ""
    folder = ITERATION_FOLDER.fullmatch(parts[-1])
    if folder is None:
        return parts[-1] if iteration is None else f"{parts[-1]} @ {iteration}"
    above = parts[:-1]
    if above[-2:-1] and above[-1] == "checkpoints":  # <run output>/checkpoints/iteration-N: the run's folder
        above = above[:-1]
    label = "/".join([*above[-1:], parts[-1]])
    return label if iteration is None or int(folder.group(1)) == iteration else f"{label} @ {iteration}"
