"""WSGI entry point (gunicorn serves `memapp.wsgi:application`).

The whole app is loaded here, before any request. Django would otherwise, on the first request
to each worker, import the URL patterns with every view, DRF and the Anthropic SDK, compile the
URL patterns, and build each model's query machinery: that request took over a second, longer
than an agent's hook waits (docs/design.md §21). `manage.py serve` runs gunicorn with
`--preload`, so this happens once, before the workers fork.
"""

import contextlib
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memapp.settings")
application = get_wsgi_application()


def _load_the_app() -> None:
    from django.conf import settings
    from django.core.cache import caches
    from django.db import connections
    from django.urls import Resolver404, get_resolver
    from django.utils.module_loading import import_string

    from memapp.stores.recall import load_model_client

    with contextlib.suppress(Resolver404):
        get_resolver().resolve("/-/")  # no pattern matches: each is imported and compiled
    for path in (settings.MESSAGE_STORAGE, settings.SESSION_SERIALIZER):
        import_string(path)
    caches["default"]  # noqa: B018 (the cache backend, for the throttle and recall budgets)
    load_model_client()
    warm_worker()
    connections.close_all()  # a forked worker must never share its parent's connection


def warm_worker() -> None:
    """One query per model of memhub's: it finds nothing, but builds each model's query
    machinery and opens this process's database connection (kept, for its first request)."""
    from django.apps import apps
    from django.db import DatabaseError

    for model in apps.get_models():
        if model._meta.app_label in ("auth", "memapp", "teamsync", "snapshots"):
            with contextlib.suppress(DatabaseError):  # e.g. before the first migrate
                model.objects.filter(pk__isnull=True).first()


_load_the_app()
