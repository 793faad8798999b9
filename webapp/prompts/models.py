"""Prompt sets and their prompts (METHOD.md section 1)."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from common.path_rules import is_within
from webapp.jobs import Job
from webapp.projects.models import Project, ProjectScopedQuerySet


def uploads_folder(project_id: int) -> Path:
    """Where the web server stores a project's large uploads until a worker has imported them."""
    return Path(settings.UPLOADS_DIR) / f"project-{project_id}"


class PromptSet(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prompt_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=300, blank=True, help_text="Where the prompts came from (file, generator).")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_prompt_set_name")]

    def __str__(self) -> str:
        return self.name


class PromptQuerySet(ProjectScopedQuerySet):
    project_path = "prompt_set__project"


class Prompt(models.Model):
    prompt_set = models.ForeignKey(PromptSet, on_delete=models.CASCADE, related_name="prompts")
    position = models.PositiveIntegerField(help_text="Order within the set, from 1.")
    problem = models.TextField()
    image = models.CharField(max_length=500, blank=True,
                             help_text="Image path (absolute, under the allowed roots) for multimodal problems.")
    answer = models.TextField(blank=True, help_text="Reference answer, checked by the verifier.")
    test_cases = models.JSONField(null=True, blank=True, help_text="Code problems: list of {input, output}.")
    domain = models.CharField(max_length=100, blank=True, help_text="For example math, code, vision.")
    tags = models.JSONField(default=list, blank=True, help_text="Discipline tags.")
    difficulty = models.CharField(max_length=50, blank=True, help_text="Difficulty label (easy, medium, hard...).")
    pass_rate = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Measured pass rate of an SFT model (lower = harder).",
    )

    objects = PromptQuerySet.as_manager()

    class Meta:
        ordering = ["prompt_set", "position"]
        constraints = [models.UniqueConstraint(fields=["prompt_set", "position"], name="unique_prompt_position")]
        indexes = [models.Index(fields=["prompt_set", "difficulty"])]

    def __str__(self) -> str:
        return self.problem[:60]


class PromptSetImport(Job):
    """A prompt set being imported from a Hugging Face dataset by a cpu worker (workers/prompt_import_job.py)."""

    retry_hint = "Import it again to try again (an uploaded file was deleted with the failed import: upload it again)."

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prompt_set_imports")
    name = models.CharField(max_length=200, help_text="Name of the prompt set the import creates.")
    description = models.TextField(blank=True)
    config = models.JSONField(help_text="The resolved PromptImportConfig: dataset, split, column mapping, limit.")
    prompt_set = models.ForeignKey(PromptSet, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="imports", help_text="The set created (or appended to), once the "
                                                                     "import succeeded.")
    upload_file = models.CharField(max_length=500, blank=True, help_text="An uploaded prompt file too large to "
                                   "import inside the request, stored until the worker has imported it.")
    upload_format = models.CharField(max_length=10, blank=True, help_text="jsonl or csv (uploads only).")
    append_to = models.ForeignKey(PromptSet, null=True, blank=True, on_delete=models.CASCADE,
                                  related_name="pending_uploads", help_text="An upload appended to this set "
                                                                            "(instead of a new set).")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="prompt_set_imports")

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def discard_inputs(self) -> None:
        """The stored upload is deleted (only from the project's uploads folder, where the web server put it)."""
        if self.upload_file and is_within(os.path.realpath(self.upload_file),
                                          os.path.realpath(uploads_folder(self.project_id))):
            Path(self.upload_file).unlink(missing_ok=True)

    def __str__(self) -> str:
        if self.upload_file:
            return f"upload of {self.config.get('file_name', 'a file')} into {self.name}"
        return f"import of {self.config.get('dataset_id', '?')} as {self.name}"
