from django.apps import AppConfig


class MemappConfig(AppConfig):
    name = "memapp"
    verbose_name = "memhub"
