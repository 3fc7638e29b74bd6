from django.apps import AppConfig


class TeamsyncConfig(AppConfig):
    name = "teamsync"
    verbose_name = "team sync"

    def ready(self) -> None:
        from memapp.stores.changes import follow_changes, follow_disk_changes
        from memapp.stores.projects import register_claimed
        from memapp.stores.waiting import register_waiting
        from memapp.stores.warm import connect_signals
        from memapp.stores.withheld import register_served_index, register_withheld
        from teamsync.models import BlockedFile
        from teamsync.protocol import kept_back, served_index
        from teamsync.service import (
            do_commit_team_change,
            in_shared_repository,
            sync_changed_on_disk,
        )
        from teamsync.waiting import blocked_files, open_conflicts

        follow_changes(do_commit_team_change)
        follow_disk_changes(sync_changed_on_disk)
        register_claimed(in_shared_repository)
        register_waiting("conflicts", "team sync conflicts", "sync", open_conflicts)
        register_waiting("blocked", "files kept back from team sync", "sync", blocked_files)
        register_withheld(kept_back)
        register_served_index(served_index)
        connect_signals([BlockedFile])
