from django.contrib import admin

from webapp.long2short.models import Long2ShortRecord, Long2ShortVariant


@admin.register(Long2ShortVariant)
class Long2ShortVariantAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "method", "parent_run", "parent_checkpoint", "status", "created_at")
    list_filter = ("method", "status", "project")
    raw_id_fields = ("parent_run", "parent_checkpoint")
    readonly_fields = ("created_at", "started_at", "finished_at", "worker", "traceback", "log")


@admin.register(Long2ShortRecord)
class Long2ShortRecordAdmin(admin.ModelAdmin):
    list_display = ("variant", "kind", "prompt_id", "chosen_tokens", "rejected_tokens", "rejected_reason")
    list_filter = ("kind", "rejected_reason")
    list_select_related = ("variant",)
    raw_id_fields = ("variant",)
