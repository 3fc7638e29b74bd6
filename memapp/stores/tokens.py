"""API tokens: created and shown once, stored as SHA-256, scoped, expiring and renewable,
revocable, last use (when, which client) kept cheaply (docs/design.md §26)."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.utils import timezone

from memapp.stores.models import ApiToken
from memapp.stores.warm import remembered

TOKEN_PREFIX = "mh_"
# Remember a token's last use at most this often, so API calls are not each a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# A revoked token can be reinstated this long (docs/design.md §23): long enough to undo a click
# on the wrong row, short enough that "revoked" soon means gone for good.
REINSTATE_WITHIN = timedelta(hours=24)
USER_AGENT_MAX = 200
# What each scope allows, smallest first: a token of a scope may do what every scope before it
# may (docs/design.md §26).
SCOPE_ORDER = [
    ApiToken.Scope.READ,
    ApiToken.Scope.WRITE,
    ApiToken.Scope.TEAM_WRITE,
    ApiToken.Scope.ADMIN,
]


class ReinstateRefused(Exception):
    """Too late (or never revoked): the token stays as it is."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def scope_allows(granted: str, needed: str) -> bool:
    return SCOPE_ORDER.index(ApiToken.Scope(granted)) >= SCOPE_ORDER.index(ApiToken.Scope(needed))


def token_lifetime() -> timedelta | None:
    """How long a new or renewed token lives (MEMHUB_TOKEN_DAYS; 0: forever)."""
    days = settings.MEMHUB_TOKEN_DAYS
    return timedelta(days=days) if days else None


def _expiry():
    lifetime = token_lifetime()
    return None if lifetime is None else timezone.now() + lifetime


def do_create_api_token(
    user, name: str, scope: str = ApiToken.Scope.TEAM_WRITE
) -> tuple[ApiToken, str]:
    """Return the new token row and the token itself, which is never stored nor shown again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        user=user,
        name=name.strip() or "token",
        prefix=token[:10],
        token_hash=hash_token(token),
        scope=ApiToken.Scope(scope),
        expires_at=_expiry(),
    )
    return row, token


def do_renew_api_token(token: ApiToken) -> None:
    """The same token lives another lifetime from now (an expired one works again)."""
    token.expires_at = _expiry()
    token.save(update_fields=["expires_at"])


def do_revoke_api_token(token: ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


def reinstatable_until(token: ApiToken):
    """Until when a revoked token can be reinstated (None: it cannot be)."""
    if token.revoked_at is None:
        return None
    until = token.revoked_at + REINSTATE_WITHIN
    return until if until > timezone.now() else None


def do_reinstate_api_token(token: ApiToken) -> None:
    """Undo a revoke made less than REINSTATE_WITHIN ago: the same token works again."""
    if reinstatable_until(token) is None:
        raise ReinstateRefused(
            f"{token.name!r} was revoked more than {REINSTATE_WITHIN.total_seconds() / 3600:.0f} "
            "hours ago: create a new token instead."
        )
    token.revoked_at = None
    token.save(update_fields=["revoked_at"])


def authenticate_token(token: str, user_agent: str = "") -> ApiToken | None:
    """The active token row for `token`, or None (`refusal` says why); refreshes its last use
    (when, which client) at most once a minute, or at once when the client changed."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    row = remembered(("token", hash_token(token)), partial(_active_row, hash_token(token)))
    now = timezone.now()
    if row is None or (row.expires_at is not None and row.expires_at <= now):
        return None  # expired since it was remembered
    user_agent = user_agent[:USER_AGENT_MAX]
    stale = row.last_used_at is None or now - row.last_used_at > LAST_USED_RESOLUTION
    if stale or row.last_user_agent != user_agent:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now, last_user_agent=user_agent)
        row.last_used_at, row.last_user_agent = now, user_agent
    return row


def _active_row(token_hash: str) -> ApiToken | None:
    return (
        ApiToken.objects.active()
        .select_related("user")
        .filter(token_hash=token_hash, user__is_active=True)
        .first()
    )


def refusal(token: str) -> str:
    """Why `authenticate_token` refused `token`: an expired token is told how to get back in."""
    row = ApiToken.objects.filter(token_hash=hash_token(token), revoked_at__isnull=True).first()
    if row is not None and row.expired:
        return (
            f"Token {row.name!r} expired on {row.expires_at:%Y-%m-%d}: renew it on the API "
            "tokens page, or run `memhub-agent login` again."
        )
    return "Invalid or revoked token."


def last_call(user) -> ApiToken | None:
    """The user's token that called in last (their agent is connected), or None."""
    return (
        ApiToken.objects.active()
        .filter(user=user, last_used_at__isnull=False)
        .order_by("-last_used_at")
        .first()
    )
