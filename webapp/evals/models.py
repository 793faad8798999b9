"""Benchmark suites, evaluation runs, per-benchmark results and per-sample rows."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from webapp.jobs import Job
from webapp.projects.models import Project, ProjectScopedQuerySet


class BenchmarkSuite(models.Model):
    """An ordered list of benchmarks with their settings (evaluation.suite_config.BenchmarkSettings)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="suites")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    benchmarks = models.JSONField(help_text="Ordered list of {benchmark, samples_per_problem, max_tokens, ...}.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="unique_suite_name")]

    def __str__(self) -> str:
        return self.name

    def usage(self) -> str:
        """'2 evaluations and 1 run' referring to the suite, '' when none does; a used suite keeps its benchmarks
        so earlier scores stay comparable."""
        counts = ((self.eval_runs.count(), "evaluation"), (self.rl_runs.count(), "run"))
        return " and ".join(f"{count} {noun}{'s' if count > 1 else ''}" for count, noun in counts if count)


class EvalRun(Job):
    """A checkpoint, or a model by name, evaluated on a suite."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="eval_runs")
    suite = models.ForeignKey(BenchmarkSuite, on_delete=models.PROTECT, related_name="eval_runs")
    checkpoint = models.ForeignKey(
        "runs.Checkpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="eval_runs"
    )
    model = models.CharField(max_length=300, blank=True, help_text="Model path or preset when no checkpoint.")
    rollout_engine = models.CharField(max_length=20, default="torch")
    seed = models.PositiveIntegerField(default=0)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="eval_runs")

    objects = ProjectScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.checkpoint or self.model} on {self.suite}"


class EvalScopedQuerySet(ProjectScopedQuerySet):
    project_path = "eval_run__project"


class BenchmarkResult(models.Model):
    """One benchmark's score within an evaluation run."""

    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    benchmark = models.CharField(max_length=100)
    score = models.FloatField(help_text="Pass@1 averaged over samples, 0 to 1.")
    ci_low = models.FloatField(null=True, blank=True, help_text="95% bootstrap confidence interval, low end.")
    ci_high = models.FloatField(null=True, blank=True)
    mean_response_tokens = models.FloatField(null=True, blank=True)
    num_problems = models.PositiveIntegerField(default=0)
    samples_per_problem = models.PositiveIntegerField(default=1)
    metrics = models.JSONField(default=dict, blank=True, help_text="pass@k, maj@k and other metrics by name.")

    objects = EvalScopedQuerySet.as_manager()

    class Meta:
        ordering = ["eval_run", "benchmark"]
        constraints = [models.UniqueConstraint(fields=["eval_run", "benchmark"], name="one_result_per_benchmark")]


class SampleResult(models.Model):
    """One sampled response to one problem: the raw material of accuracy-versus-length curves."""

    # No single-column index: the composite indexes below all start with eval_run.
    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="samples", db_index=False)
    benchmark = models.CharField(max_length=100)
    problem_id = models.CharField(max_length=200)
    sample_index = models.PositiveIntegerField(default=0)
    response = models.TextField(blank=True)
    response_tokens = models.PositiveIntegerField()
    correct = models.BooleanField()
    truncated = models.BooleanField(default=False)
    extracted_answer = models.TextField(blank=True)

    objects = EvalScopedQuerySet.as_manager()

    class Meta:
        ordering = ["eval_run", "benchmark", "problem_id", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["eval_run", "benchmark", "problem_id", "sample_index"], name="one_row_per_sample"
            )
        ]
        indexes = [
            # Length-binned accuracy and length filters of one run's benchmark.
            # Covering (INCLUDE correct) so length-binned accuracy is an index-only scan.
            models.Index(fields=["eval_run", "benchmark", "response_tokens"], include=["correct"],
                         name="sample_length_idx"),
            models.Index(fields=["eval_run", "benchmark", "correct"], name="sample_correct_idx"),
        ]
