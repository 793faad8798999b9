from django.contrib import admin

from webapp.prompts.models import Prompt, PromptSet, PromptSetImport


@admin.register(PromptSet)
class PromptSetAdmin(admin.ModelAdmin):
    list_display = ("name", "project", "source", "created_at")
    list_filter = ("project",)
    search_fields = ("name",)


@admin.register(Prompt)
class PromptAdmin(admin.ModelAdmin):
    list_display = ("id", "prompt_set", "position", "difficulty", "domain", "pass_rate")
    list_filter = ("prompt_set__project", "difficulty", "domain")
    search_fields = ("problem",)
    raw_id_fields = ("prompt_set",)


@admin.register(PromptSetImport)
class PromptSetImportAdmin(admin.ModelAdmin):
    list_display = ("id", "project", "name", "status", "prompt_set", "created_at")
    list_filter = ("status", "project")
    raw_id_fields = ("prompt_set",)
    readonly_fields = ("created_at", "started_at", "finished_at", "worker", "traceback", "log")
