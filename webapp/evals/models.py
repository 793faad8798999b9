"""Benchmark suites, evaluation runs, per-benchmark results, per-sample rows and grader audits."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from evaluation.scoring import FRACTION, HIGHER_IS_BETTER, RAW, SCORE_SCALE
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


class BenchmarkResultQuerySet(EvalScopedQuerySet):
    def fractions(self):
        """Results whose score is a 0-1 fraction: what accuracy charts plot (an lm-eval metric on its own scale,
        BLEU or a perplexity, is in tables and exports only)."""
        # has_key first: on a row without the key the comparison alone is NULL, and NOT NULL would drop the row
        return self.exclude(Q(metrics__has_key=SCORE_SCALE) & Q(**{f"metrics__{SCORE_SCALE}": RAW}))


class GraderAudit(Job):
    """A finished evaluation's stored responses graded again by a second grader, without regenerating them.

    grader: the second grader (evaluation.audit.AuditGrader: grader_mode, extraction_policy, judge_model,
    judge_max_tokens). Each audited sample keeps the second verdict (SampleResult.audit_*), each audited benchmark
    its disagreement counts (BenchmarkResult.audit_*); summary holds them per benchmark, and the skipped ones.
    """

    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="audits")
    grader = models.JSONField(help_text="The second grader: grader_mode, extraction_policy, judge_model, "
                                        "judge_max_tokens.")
    summary = models.JSONField(default=dict, blank=True, help_text="Per benchmark: samples, disagreements, "
                                                                   "disagreement_rate, judge_errors; or skipped.")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="grader_audits")

    objects = EvalScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"audit {self.pk} of evaluation {self.eval_run_id}"

    def grader_label(self) -> str:
        """'rule, boxed extraction' or 'judge Qwen/Qwen2.5-7B-Instruct'."""
        return grader_label(self.grader)


def grader_label(grader: dict) -> str:
    mode = grader.get("grader_mode", "rule")
    if mode == "rule":
        return f"rule, {grader.get('extraction_policy', 'flexible')} extraction"
    return f"{mode} {grader.get('judge_model') or ''}".strip()


# Metrics that say how a benchmark was graded (evaluation.builtin_runner.grading_metadata), shown apart from the scores.
GRADING_METRICS = ("extraction_policy", "grader_mode", "judge_model", "judged_samples", "judge_errors")


class BenchmarkResult(models.Model):
    """One benchmark's score within an evaluation run; audit_* compare it with a second grader's."""

    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    benchmark = models.CharField(max_length=100)
    score = models.FloatField(help_text="Pass@1 averaged over samples, 0 to 1.")
    ci_low = models.FloatField(null=True, blank=True, help_text="95% bootstrap confidence interval, low end.")
    ci_high = models.FloatField(null=True, blank=True)
    mean_response_tokens = models.FloatField(null=True, blank=True)
    num_problems = models.PositiveIntegerField(default=0)
    samples_per_problem = models.PositiveIntegerField(default=1)
    metrics = models.JSONField(default=dict, blank=True, help_text="pass@k, maj@k and other metrics by name.")
    audit = models.ForeignKey(GraderAudit, null=True, blank=True, on_delete=models.SET_NULL, related_name="results",
                              help_text="The latest grader audit of this benchmark.")
    audit_samples = models.PositiveIntegerField(null=True, blank=True, help_text="Samples the audit graded again.")
    audit_disagreements = models.PositiveIntegerField(
        null=True, blank=True, help_text="Samples whose second verdict differs from the stored one.")

    objects = BenchmarkResultQuerySet.as_manager()

    class Meta:
        ordering = ["eval_run", "benchmark"]
        constraints = [models.UniqueConstraint(fields=["eval_run", "benchmark"], name="one_result_per_benchmark")]

    @property
    def extraction_policy(self) -> str:
        """How final answers were extracted ("" for benchmarks that extract none, or results from before)."""
        return self.metrics.get("extraction_policy", "") if isinstance(self.metrics, dict) else ""

    @property
    def score_is_fraction(self) -> bool:
        """Whether score is a 0-1 fraction (shown as a percent); False for an lm-eval metric on its own scale
        (BLEU's 0-100, a perplexity), shown as it is. Every built-in benchmark's is a fraction."""
        return not isinstance(self.metrics, dict) or self.metrics.get(SCORE_SCALE, FRACTION) == FRACTION

    @property
    def higher_is_better(self) -> bool:
        """False for a metric where lower is better (lm-eval's perplexities)."""
        return not isinstance(self.metrics, dict) or self.metrics.get(HIGHER_IS_BETTER) is not False

    @property
    def score_unit(self) -> str:
        """"percent", or the lm-eval metric a raw score is a value of ("bleu_max")."""
        if self.score_is_fraction:
            return "percent"
        return str(self.metrics.get("main_metric", "value")).split(",", 1)[0]

    def other_metrics(self) -> dict:
        """The metrics other than the grading ones (pass@k, maj@k, runner...)."""
        metrics = self.metrics if isinstance(self.metrics, dict) else {}
        return {name: value for name, value in metrics.items() if name not in GRADING_METRICS}

    @property
    def audit_disagreement_rate(self) -> float | None:
        """Disagreements over audited samples, 0 to 1; None when never audited (or nothing to audit)."""
        if not self.audit_samples:
            return None
        return self.audit_disagreements / self.audit_samples


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
    reference_answer = models.TextField(blank=True, help_text="The problem's reference answer, compared with the "
                                        "extracted one (empty for code benchmarks, and for rows from before).")
    detail = models.TextField(blank=True, help_text="Why it was judged so: a sandbox verdict, a timeout, a judge "
                                                    "error.")
    extraction_policy = models.CharField(max_length=20, blank=True,
                                         help_text="How the final answer was extracted; empty where none was.")
    graded_by = models.CharField(max_length=10, blank=True, help_text="rule or judge (the CoT judge model).")
    judge_verdict = models.CharField(max_length=10, blank=True,
                                     help_text="correct, incorrect, error (no valid verdict), or empty (not asked).")
    judge_reasoning = models.TextField(blank=True, help_text="The judge's reasoning (its whole output on an error).")
    audit_correct = models.BooleanField(null=True, blank=True, help_text="The latest grader audit's verdict.")
    audit_answer = models.TextField(blank=True, help_text="The answer the audit's grader extracted.")
    audit_detail = models.TextField(blank=True, help_text="The audit's judge reasoning or error, or rule detail.")

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
            # Covering (INCLUDE correct, truncated) so length-binned accuracy is an index-only scan.
            models.Index(fields=["eval_run", "benchmark", "response_tokens"], include=["correct", "truncated"],
                         name="sample_length_idx"),
            models.Index(fields=["eval_run", "benchmark", "correct"], name="sample_correct_idx"),
        ]

    @property
    def audit_disagrees(self) -> bool:
        return self.audit_correct is not None and self.audit_correct != self.correct
