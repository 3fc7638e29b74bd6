from django.apps import AppConfig


class StoresConfig(AppConfig):
    """Stores, their mirror, projects, flags, events and tokens: every write to a store goes
    through this app. Its label stays `memapp`, the app's name before the layers were split, so
    tables and migration history are unchanged."""

    name = "memapp.stores"
    label = "memapp"
    verbose_name = "memhub"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model

        from memapp.stores.models import ApiToken, FlagValue, Project, ProjectAlias, Store
        from memapp.stores.warm import connect_signals

        resolved = (Store, Project, ProjectAlias, FlagValue, ApiToken, get_user_model())
        connect_signals(resolved, Project.members.through)
