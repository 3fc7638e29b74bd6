"""Headers every answer carries, and uploads refused before anything reads them
(docs/design.md §25)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from memapp.stores.transfer import MAX_UPLOAD_BYTES
from memapp.web.views.errors import error_page

# Every page's policy: scripts, styles, images and fonts from memhub itself, nothing inline
# (the API docs set their own, laxer policy for Redoc's inline styles: memapp.api.docs).
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
# A form's largest upload is a zip of MAX_UPLOAD_BYTES; the multipart wrapping and the other
# fields of its form add far less than this.
MAX_FORM_BODY_BYTES = MAX_UPLOAD_BYTES + 64 * 1024


def security_headers(get_response):
    """A Content-Security-Policy on every answer that has none, and `Cache-Control: no-store`
    on every answer to a signed-in person or to the API: pages show private memories and,
    once, new tokens, which no browser or proxy cache should keep."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        user = getattr(request, "user", None)
        if request.path_info.startswith("/api/") or (user is not None and user.is_authenticated):
            response["Cache-Control"] = "no-store"
        return response

    return middleware


def upload_limit(get_response):
    """413 for a form body larger than the largest upload, told by its Content-Length before
    Django reads it (CSRF's check would read it, writing an upload to a temporary file). The
    API's own limit is memapp.api.middleware's."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > MAX_FORM_BODY_BYTES:
                return error_page(request, 413)
        return get_response(request)

    return middleware
