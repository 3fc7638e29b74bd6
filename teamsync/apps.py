from django.apps import AppConfig


class TeamsyncConfig(AppConfig):
    name = "teamsync"
    verbose_name = "team sync"

    def ready(self) -> None:
        from memapp.stores.changes import follow_changes
        from memapp.stores.review import count_for_review
        from teamsync.review import held_back_for_secrets, open_conflicts
        from teamsync.service import commit_team_change

        follow_changes(commit_team_change)
        count_for_review(
            "team_conflicts", "team sync conflict", "team sync conflicts", open_conflicts
        )
        count_for_review(
            "held_for_secrets",
            "file held back for secrets",
            "files held back for secrets",
            held_back_for_secrets,
        )
