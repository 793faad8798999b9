from django.contrib import admin

from webapp.evals.models import BenchmarkResult, BenchmarkSuite, EvalRun, GraderAudit, SampleResult


@admin.register(BenchmarkSuite)
class BenchmarkSuiteAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "created_at")
    list_filter = ("project",)


@admin.register(EvalRun)
class EvalRunAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "suite", "checkpoint", "model", "status", "created_at")
    list_filter = ("status", "project")
    raw_id_fields = ("checkpoint",)
    readonly_fields = ("created_at", "started_at", "finished_at", "worker", "traceback", "log")


@admin.register(BenchmarkResult)
class BenchmarkResultAdmin(admin.ModelAdmin):
    list_display = ("eval_run", "benchmark", "score", "ci_low", "ci_high", "mean_response_tokens")
    list_filter = ("benchmark",)
    raw_id_fields = ("eval_run",)


@admin.register(SampleResult)
class SampleResultAdmin(admin.ModelAdmin):
    list_display = ("eval_run", "benchmark", "problem_id", "sample_index", "response_tokens", "correct", "truncated",
                    "graded_by", "judge_verdict", "audit_correct")
    list_filter = ("benchmark", "correct", "truncated", "graded_by", "judge_verdict")
    raw_id_fields = ("eval_run",)


@admin.register(GraderAudit)
class GraderAuditAdmin(admin.ModelAdmin):
    list_display = ("id", "eval_run", "status", "created_at")
    list_filter = ("status",)
    raw_id_fields = ("eval_run",)
    readonly_fields = ("created_at", "started_at", "finished_at", "worker", "traceback", "log")
