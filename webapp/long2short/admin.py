from django.contrib import admin

from webapp.long2short.models import Long2ShortVariant


@admin.register(Long2ShortVariant)
class Long2ShortVariantAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "method", "parent_run", "parent_checkpoint", "status", "created_at")
    list_filter = ("method", "status", "project")
    raw_id_fields = ("parent_run", "parent_checkpoint")
    readonly_fields = ("created_at", "started_at", "finished_at", "worker", "traceback", "log")
