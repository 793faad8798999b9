from django.apps import AppConfig


class PromptsConfig(AppConfig):
    name = "webapp.prompts"
    label = "prompts"
