from django.apps import AppConfig


class TeamsyncConfig(AppConfig):
    name = "teamsync"
    verbose_name = "team sync"
