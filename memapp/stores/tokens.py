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
