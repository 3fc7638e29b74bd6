from django.apps import AppConfig


class WebConfig(AppConfig):
    """The browser pages (and the Django admin's registrations); no models."""

    name = "memapp.web"
    label = "web"
    verbose_name = "memhub pages"
