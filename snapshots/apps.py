from django.apps import AppConfig


class SnapshotsConfig(AppConfig):
    name = "snapshots"
    verbose_name = "agent memory snapshots"

    def ready(self) -> None:
        from memapp.stores.review import count_for_review
        from snapshots.targets import pending_updates

        count_for_review("snapshot_updates", "snapshot update", "snapshot updates", pending_updates)
