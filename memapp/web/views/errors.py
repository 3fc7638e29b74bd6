"""The site's 403, 404 and 500 pages: the site's own layout and navigation, so a person who
lands on one can go on from there. The API answers its errors as JSON (memapp.api.errors)."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.template import loader

from memapp.stores.transfer import MAX_UPLOAD_BYTES

logger = logging.getLogger(__name__)

PAGES = {
    403: (
        "You may not see this page",
        "It belongs to someone else, or it needs an administrator.",
    ),
    404: (
        "Nothing here",
        "This page does not exist, or it is not yours to see. Memories of other people "
        "and of projects you are not a member of are not shown.",
    ),
    413: (
        "This upload is too large",
        f"At most {MAX_UPLOAD_BYTES // 2**20} MB are accepted; nothing was uploaded or kept. "
        "Export fewer memories, or leave out what is not memory, and send it again.",
    ),
    "csrf": (
        "This form has expired",
        "The page it came from is too old, or your browser did not send its cookie. Go back, "
        "reload the page and send the form again: nothing was changed.",
    ),
    500: (
        "Something went wrong on our side",
        "memhub could not show this page. Nothing you wrote was lost; the error is in the "
        "server's log. Try again in a moment.",
    ),
}


def error_page(request: HttpRequest, status: int, page: int | str | None = None) -> HttpResponse:
    heading, explanation = PAGES[page or status]
    context = {"status": status, "heading": heading, "explanation": explanation}
    template = loader.get_template("error.html")
    if not hasattr(request, "user"):
        # Refused before the session was read (an upload over the limit): nobody to show.
        return HttpResponse(template.render(context), status=status)
    try:
        body = template.render(context, request)
    except Exception:
        # A broken database (say) must not hide the error page: render it without the
        # request, so without the user and the navigation.
        logger.exception("the %s page could not be rendered with its navigation", status)
        body = template.render(context)
    return HttpResponse(body, status=status)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return error_page(request, 403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    return error_page(request, 403, "csrf")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return error_page(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    return error_page(request, 500)
