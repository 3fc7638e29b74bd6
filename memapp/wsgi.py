"""WSGI entry point (memapp.http_server serves `memapp.wsgi:application`).

The whole app is loaded here, before any request. Django would otherwise, on the first request
to each worker, import the URL patterns with every view, DRF and (with an API key) the
Anthropic SDK, and compile the URL patterns: that request took over a second, longer than an
agent's hook waits (docs/design.md §21). memapp.http_server imports this module before its
workers fork, so this happens once; it opens no database connection, which a forked
worker must not share.

An agent's usual recall and prompt, which memapp.api.plain_views answers itself, pass through
a second handler with only the middleware that changes an API answer (`settings.MIDDLEWARE`
less `settings.PAGE_MIDDLEWARE`): the browser's eight were a sixth of a recall's instructions.
"""

import contextlib
import os

from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application
from django.http import HttpResponse

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memapp.settings")
pages = get_wsgi_application()


class PlainApiHandler(WSGIHandler):
    """Django's handler with the middleware of `settings.MIDDLEWARE` that is not a page's."""

    def load_middleware(self, is_async=False):
        from django.conf import settings

        everything = settings.MIDDLEWARE
        settings.MIDDLEWARE = [m for m in everything if m not in settings.PAGE_MIDDLEWARE]
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = everything


def _plain_views() -> dict:
    """Each plain view by the path it answers, as PATH_INFO has it (without a script prefix)."""
    from django.urls import get_script_prefix, reverse

    from memapp.api.plain_views import plain_prompt, plain_recall

    prefix = len(get_script_prefix()) - 1
    return {
        reverse(name)[prefix:]: view
        for name, view in (("api_recall", plain_recall), ("api_prompt", plain_prompt))
    }


plain_api = PlainApiHandler()
_views = _plain_views()


def plain_request(environ) -> bool:
    """Whether the plain API handler answers a request: its view answers it itself, and it
    has no cookies (the session and CSRF middleware answer a stale one; an agent sends none)."""
    view = _views.get(environ.get("PATH_INFO"))
    return view is not None and not environ.get("HTTP_COOKIE") and view.answers_here(environ)


def application(environ, start_response):
    """The plain API handler for a plain request, else the whole one. A whole answer goes back
    as a list of its bytes, which the server sends in one call (iterating Django's response
    from the server took a tenth of a recall's interpreter time); a streamed one as it is."""
    response = (plain_api if plain_request(environ) else pages)(environ, start_response)
    if isinstance(response, HttpResponse):
        body = [response.content]
        response.close()
        return body
    return response


def _load_the_app() -> None:
    from django.conf import settings
    from django.core.cache import caches
    from django.urls import Resolver404, get_resolver
    from django.utils.module_loading import import_string

    from memapp.memdir import detect_secrets_scan  # noqa: F401 (a team write's scan)
    from memapp.stores.recall import load_model_client

    with contextlib.suppress(Resolver404):
        get_resolver().resolve("/-/")  # no pattern matches: each is imported and compiled
    for path in (settings.MESSAGE_STORAGE, settings.SESSION_SERIALIZER):
        import_string(path)
    caches["default"]  # noqa: B018 (the cache backend, for the throttle and recall budgets)
    load_model_client()


_load_the_app()
