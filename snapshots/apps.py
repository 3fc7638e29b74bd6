from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    name = "snapshots"
    verbose_name = "agent memory snapshots"

    def ready(self) -> None:
        from memapp.stores.waiting import register_waiting
        from snapshots.waiting import pending_updates

        register_waiting("snapshots", "snapshot updates", "snapshot_list", pending_updates)
