"""One authentication class and one throttle for the whole API (tokens, per token), and how the
OpenAPI schema describes that authentication."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.throttling import SimpleRateThrottle

from memapp.stores.shared_state import locked
from memapp.stores.tokens import authenticate_token


class BearerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer mh_…` with a memhub API token."""

    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        try:
            token = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Malformed token.") from None
        row = authenticate_token(token)
        if row is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return row.user, row

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="memhub"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Without it the schema would not say that every operation takes a bearer token
    (drf-spectacular knows only DRF's own authentication classes)."""

    target_class = BearerTokenAuthentication
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A memhub API token: `Authorization: Bearer mh_…`.",
        }


class TokenRateThrottle(SimpleRateThrottle):
    """Rate limit per API token. The request history lives in the shared cache and is read and
    written under its lock, so N gunicorn workers together allow the rate, not N times it."""

    scope = "token"

    def allow_request(self, request, view) -> bool:
        key = None if self.rate is None else self.get_cache_key(request, view)
        if key is None:
            return True
        with locked(key):
            return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        if request.auth is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.auth.pk}
