"""WSGI entry point (gunicorn serves `memapp.wsgi:application`).

The whole app is loaded here, before any request. Django would otherwise, on the first request
to each worker, import the URL patterns with every view, DRF and (with an API key) the
Anthropic SDK, and compile the URL patterns: that request took over a second, longer than an
agent's hook waits (docs/design.md §21). `manage.py serve` runs gunicorn with `--preload`, so
this happens once, before the workers fork; it opens no database connection, which a forked
worker must not share.
"""

import contextlib
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memapp.settings")
application = get_wsgi_application()


def _load_the_app() -> None:
    from django.conf import settings
    from django.core.cache import caches
    from django.urls import Resolver404, get_resolver
    from django.utils.module_loading import import_string

    from memapp.stores.recall import load_model_client

    with contextlib.suppress(Resolver404):
        get_resolver().resolve("/-/")  # no pattern matches: each is imported and compiled
    for path in (settings.MESSAGE_STORAGE, settings.SESSION_SERIALIZER):
        import_string(path)
    caches["default"]  # noqa: B018 (the cache backend, for the throttle and recall budgets)
    load_model_client()


_load_the_app()
