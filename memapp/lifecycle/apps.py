from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    """Sessions in, memories out: transcripts, extraction, proposals and past-context search
    (docs/design.md §14)."""

    name = "memapp.lifecycle"
    label = "lifecycle"
    verbose_name = "memory lifecycle"

    def ready(self) -> None:
        from memapp.lifecycle.proposals import pending_count
        from memapp.stores.waiting import register_waiting

        register_waiting("proposals", "proposals to review", "proposals", pending_count)
