"""Browser login for agents: the device authorization grant of RFC 8628 (docs/design.md §26).

`memhub-agent login URL` asks for a code pair, shows the short user code, and polls; the person,
signed in to memhub, approves (or denies) the named device; the next poll gets a token of that
person. Codes expire, are approved once and issue one token; polling faster than the interval
is answered `slow_down` and the interval grows by five seconds, as the RFC says.
"""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memapp.stores.models import ApiToken, DeviceAuthorization
from memapp.stores.tokens import do_create_api_token, hash_token

# No vowels (no words), no look-alikes: 20**8 codes, typed in a minute (RFC 8628, section 6.1).
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
CODE_LIFETIME = timedelta(minutes=10)
SLOW_DOWN_STEP = 5


class DeviceFlowError(Exception):
    """An RFC 8628 error: `code` is its error code, the message tells the person."""

    def __init__(self, code: str, message: str, interval: int = 0) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.interval = interval


def normalize_user_code(value: str) -> str:
    """`bcdf-ghjk`, `BCDFGHJK` and ` bcdf ghjk ` are all `BCDF-GHJK`."""
    letters = "".join(ch for ch in value.upper() if ch.isalnum())
    return f"{letters[:4]}-{letters[4:]}" if len(letters) == 8 else letters


def _new_user_code() -> str:
    letters = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(8))
    return f"{letters[:4]}-{letters[4:]}"


def do_start_device_authorization(
    device_name: str, client: str = ""
) -> tuple[DeviceAuthorization, str]:
    """A new pending authorization and its device code (kept by the device, stored hashed)."""
    device_code = secrets.token_urlsafe(32)
    user_code = _new_user_code()
    while DeviceAuthorization.objects.filter(user_code=user_code).exists():
        user_code = _new_user_code()
    row = DeviceAuthorization.objects.create(
        device_code_hash=hash_token(device_code),
        user_code=user_code,
        device_name=device_name.strip()[:100] or "device",
        client=client[:200],
        expires_at=timezone.now() + CODE_LIFETIME,
        interval=settings.MEMHUB_DEVICE_POLL_SECONDS,
    )
    return row, device_code


def pending_authorization(user_code: str) -> DeviceAuthorization:
    """The authorization a person may still approve or deny. Raises DeviceFlowError."""
    row = DeviceAuthorization.objects.filter(user_code=normalize_user_code(user_code)).first()
    if row is None:
        raise DeviceFlowError("invalid_grant", "No device is waiting with this code: check it.")
    if row.expired:
        raise DeviceFlowError(
            "expired_token", "This code has expired: run `memhub-agent login` again."
        )
    if row.status != DeviceAuthorization.Status.PENDING:
        raise DeviceFlowError(
            "invalid_grant", f"This code was already {row.status}: it works once."
        )
    return row


def _decide(user_code: str, user, status: str) -> DeviceAuthorization:
    with transaction.atomic():
        row = pending_authorization(user_code)
        row = DeviceAuthorization.objects.select_for_update().get(pk=row.pk)
        if row.status != DeviceAuthorization.Status.PENDING:
            raise DeviceFlowError("invalid_grant", "This code was already decided.")
        row.status, row.user = status, user
        row.save(update_fields=["status", "user"])
    return row


def do_approve_device(user_code: str, user) -> DeviceAuthorization:
    return _decide(user_code, user, DeviceAuthorization.Status.APPROVED)


def do_deny_device(user_code: str, user) -> DeviceAuthorization:
    return _decide(user_code, user, DeviceAuthorization.Status.DENIED)


def do_poll_device(device_code: str) -> tuple[ApiToken, str]:
    """The token of an approved device, issued once. Raises DeviceFlowError with the RFC's
    codes: authorization_pending, slow_down, access_denied, expired_token, invalid_grant."""
    with transaction.atomic():
        row = (
            DeviceAuthorization.objects.select_for_update()
            .filter(device_code_hash=hash_token(device_code))
            .first()
        )
        if row is None:
            raise DeviceFlowError("invalid_grant", "Unknown device code.")
        # The poll is recorded whatever it answers, so the error is raised after the commit.
        error = _poll_error(row, timezone.now())
        if error is None:
            token, secret = do_create_api_token(row.user, row.device_name)
            row.status, row.token = DeviceAuthorization.Status.ISSUED, token
            row.save(update_fields=["status", "token"])
    if error is not None:
        raise error
    return token, secret


def _poll_error(row: DeviceAuthorization, now) -> DeviceFlowError | None:
    """What this poll is answered (None: the token), after recording it."""
    too_soon = row.last_polled_at is not None and now - row.last_polled_at < timedelta(
        seconds=row.interval
    )
    row.last_polled_at = now
    if too_soon:
        row.interval += SLOW_DOWN_STEP
        row.save(update_fields=["last_polled_at", "interval"])
        return DeviceFlowError(
            "slow_down",
            f"Polled too fast: wait {row.interval} seconds between polls.",
            row.interval,
        )
    row.save(update_fields=["last_polled_at"])
    if row.status == DeviceAuthorization.Status.DENIED:
        return DeviceFlowError("access_denied", "The login was denied in memhub.")
    if row.status == DeviceAuthorization.Status.ISSUED:
        return DeviceFlowError("invalid_grant", "This device code was already used.")
    if row.expired:
        return DeviceFlowError("expired_token", "The code expired before it was approved.")
    if row.status == DeviceAuthorization.Status.PENDING:
        return DeviceFlowError("authorization_pending", "Waiting for approval in memhub.")
    if not row.user.is_active:  # deactivated since approving: a token it could not use
        return DeviceFlowError("access_denied", "The account that approved it is deactivated.")
    return None
