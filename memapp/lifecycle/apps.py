from django.apps import AppConfig


class LifecycleConfig(AppConfig):
    """Sessions in, memories out: transcripts, extraction, proposals and past-context search
    (docs/design.md §14)."""

    name = "memapp.lifecycle"
    label = "lifecycle"
    verbose_name = "memory lifecycle"
