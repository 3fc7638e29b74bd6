from django.apps import AppConfig


class MemhubConfig(AppConfig):
    """The project itself, as an app only for the commands that put the layers together
    (`serve`, `background`); the app that owns stores is `memapp.stores`."""

    name = "memapp"
    label = "memhub"
    verbose_name = "memhub"
