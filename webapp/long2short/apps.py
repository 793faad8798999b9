from django.apps import AppConfig


class Long2ShortConfig(AppConfig):
    name = "webapp.long2short"
    label = "long2short"
