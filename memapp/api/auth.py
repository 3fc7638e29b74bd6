"""One authentication class and one throttle for the whole API (tokens, per token), and how the
OpenAPI schema describes that authentication."""

from __future__ import annotations

from collections.abc import Iterable

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions, serializers
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.throttling import SimpleRateThrottle

from memapp.stores.models import ApiToken, Store
from memapp.stores.shared_state import update
from memapp.stores.tokens import authenticate_token, hash_token, refusal, scope_allows
from memapp.stores.warm import begin_request, read_ahead


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
        row = token_row(token, request.META.get("HTTP_USER_AGENT", ""))
        return row.user, row

    def authenticate_header(self, request) -> str:
        return AUTHENTICATE_HEADER


AUTHENTICATE_HEADER = 'Bearer realm="memhub"'


def token_row(token: str, user_agent: str, ahead: Iterable[str] = ()) -> ApiToken:
    """The active row of `token` (AuthenticationFailed, saying why, when there is none), with
    this request's warm stamp read first (memapp.stores.warm): what the request resolves may
    come from what the worker kept, and the token's throttle state (and the shared state of
    `ahead`) is read in the same round trip."""
    begin_request(ahead=[throttle_key(hash_token(token)), *ahead])
    row = authenticate_token(token, user_agent)
    if row is None:
        raise exceptions.AuthenticationFailed(refusal(token))
    return row


# POSTs that only read (a query in a body), and logging out, which any token may do to itself.
READING_VIEWS = frozenset(
    {
        "api_store_resolve",
        "api_prompt",
        "api_recall",
        "api_recall_surfaced",
        "api_session_start",
        "api_token",
        # MCP: every call is a POST; its write tools check the token's scope themselves
        # (memapp/mcp/tools.py, needs_scope).
        "mcp",
        "mcp_project",
    }
)
# Views whose writes may reach a team's memory whatever store they name.
TEAM_VIEWS = frozenset({"team_memory", "api_proposal_approve", "api_proposal_reject"})


def needed_scope(request, view) -> str:
    """The smallest token scope that may make this request (docs/design.md §26)."""
    match = request.resolver_match
    name = match.url_name if match else ""
    if request.method in SAFE_METHODS or name in READING_VIEWS:
        return ApiToken.Scope.READ
    if name in TEAM_VIEWS:
        return ApiToken.Scope.TEAM_WRITE
    data = request.data if isinstance(request.data, dict) else {}
    if data.get("scope") == Store.Kind.TEAM:
        return ApiToken.Scope.TEAM_WRITE
    store_id = match.kwargs.get("store_id") if match else None
    if store_id is None:
        store_id = _store_id(data.get("store"))
    # A team store the caller cannot see needs no more than its own: the view answers 404,
    # as for any store it cannot see, so the scope tells nothing of what the id is.
    team = Store.objects.visible_to(request.user).filter(pk=store_id, kind=Store.Kind.TEAM)
    if store_id is not None and team.exists():
        return ApiToken.Scope.TEAM_WRITE
    return ApiToken.Scope.WRITE


def _store_id(value) -> int | None:
    """A body's `store` as the view's serializer will read it (an `IntegerField` also takes
    `1.0`, `"1.0"` and `" 1"`), or None when it reads none."""
    if value is None:
        return None
    try:
        store_id = serializers.IntegerField().to_internal_value(value)
    except serializers.ValidationError:
        return None
    return store_id if 0 < store_id < 2**63 else None  # a row's id, as the database holds it


def may_write(token: ApiToken) -> bool:
    """Whether a reading request's token may also create what it reads about: a read-scope
    token's prompt, recall or store lookup creates no project."""
    return scope_allows(token.scope, ApiToken.Scope.WRITE)


class TokenScopePermission(BasePermission):
    """Signed in with a token whose scope allows the request: a read token reads, a write token
    also writes its owner's memory, a team-write token also the team's."""

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        token = request.auth
        if not isinstance(token, ApiToken):
            return True
        needed = needed_scope(request, view)
        if scope_allows(token.scope, needed):
            return True
        self.message = (
            f"Token {token.name!r} has the {token.get_scope_display()!r} scope; this request "
            f"needs {ApiToken.Scope(needed).label!r}."
        )
        return False


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
    """Rate limit per API token, kept in the shared cache and changed under its lock, so N
    server workers together allow the rate, not N times it.

    A rate of n per period is a bucket of n requests refilled evenly over the period (the
    generic cell rate algorithm): a token may spend its n at once, then one each period / n.
    The state is one number, when the bucket is full again; DRF's own throttle keeps the time
    of every request in the period, a list read and written whole on every request (10 KB at
    the default 1,200/min)."""

    scope = "token"
    _wait: float | None = None

    def allow_request(self, request, view) -> bool:
        key = None if self.rate is None else self.get_cache_key(request, view)
        if key is None:
            return True
        return self.spend(key)

    def spend(self, key: str) -> bool:
        """Take one request from the bucket kept under `key`; False when it is empty (then
        `wait` says for how long)."""
        interval = self.duration / self.num_requests
        now = self.timer()

        def take(full_at: float | None) -> tuple[float, float | None]:
            after = max(full_at or now, now) + interval
            wait = after - now - self.duration
            if wait > 1e-6:  # the bucket is empty (the margin: n × period / n may round up)
                return after - interval, wait
            return after, None

        self._wait = update(key, take, self.duration, seen=read_ahead(key))
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait

    def get_cache_key(self, request, view):
        if request.auth is None:
            return None
        return throttle_key(request.auth.token_hash)


def throttle_key(token_hash: str) -> str:
    """A token's throttle state in the cache: named by the token's hash, which is known
    before the token is checked, so its authentication reads it ahead with the warm stamp."""
    return f"throttle_{TokenRateThrottle.scope}_{token_hash}"
