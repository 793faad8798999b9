from django.contrib import admin

from webapp.runs.models import Checkpoint, IterationMetric, RLRun, TrainingSample


@admin.register(RLRun)
class RLRunAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "status", "current_iteration", "total_iterations", "owner", "created_at")
    list_filter = ("status", "project")
    search_fields = ("name",)
    readonly_fields = ("created_at", "started_at", "finished_at", "worker", "traceback", "log")


@admin.register(IterationMetric)
class IterationMetricAdmin(admin.ModelAdmin):
    list_display = ("run", "iteration", "train_accuracy", "mean_response_length", "loss", "seconds")
    list_filter = ("run__project",)
    raw_id_fields = ("run",)


@admin.register(TrainingSample)
class TrainingSampleAdmin(admin.ModelAdmin):
    list_display = ("run", "iteration", "prompt_id", "sample_index", "reward", "correct", "response_tokens")
    list_filter = ("correct", "truncated", "repeated")
    raw_id_fields = ("run",)


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "run", "variant", "iteration", "path", "size_bytes", "files_removed_at")
    list_filter = ("project",)
    raw_id_fields = ("run", "variant")
