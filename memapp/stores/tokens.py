"""API tokens: created and shown once, stored as SHA-256, revocable, last use kept cheaply."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.utils import timezone

from memapp.stores.models import ApiToken

TOKEN_PREFIX = "mh_"
# Remember a token's last use at most this often, so API calls are not each a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# A revoked token can be reinstated this long (docs/design.md §23): long enough to undo a click
# on the wrong row, short enough that "revoked" soon means gone for good.
REINSTATE_WITHIN = timedelta(hours=24)


class ReinstateRefused(Exception):
    """Too late (or never revoked): the token stays as it is."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def do_create_api_token(user, name: str) -> tuple[ApiToken, str]:
    """Return the new token row and the token itself, which is never stored nor shown again."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        user=user, name=name.strip() or "token", prefix=token[:10], token_hash=hash_token(token)
    )
    return row, token


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


def authenticate_token(token: str) -> ApiToken | None:
    """The active token row for `token`, or None; refreshes `last_used_at` at most once a minute."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    try:
        row = (
            ApiToken.objects.active()
            .select_related("user")
            .get(token_hash=hash_token(token), user__is_active=True)
        )
    except ApiToken.DoesNotExist:
        return None
    now = timezone.now()
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row
