"""The API's readable docs (`/api/docs/`): Redoc from our own static files, nothing fetched from
anywhere else (docs/design.md §22)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularRedocView
from rest_framework.authentication import SessionAuthentication

# Redoc's bundle shows a logo from its vendor's CDN; the policy keeps the browser from asking
# for it (or for anything else not served by memhub). Redoc styles itself with <style> tags and
# runs its search in a worker made from a blob.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "worker-src 'self' blob:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ]
)


class ApiDocsView(SpectacularRedocView):
    template_name = "api/docs.html"
    # A page of the site, in its frame: the person's session (not an API token) says who is
    # reading, so the navigation is theirs.
    authentication_classes = [SessionAuthentication]

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        return response
