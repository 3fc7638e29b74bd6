from django.apps import AppConfig


class TeamsyncConfig(AppConfig):
    name = "teamsync"
    verbose_name = "team sync"

    def ready(self) -> None:
        from memapp.stores.changes import follow_changes
        from teamsync.service import commit_team_change

        follow_changes(commit_team_change)
