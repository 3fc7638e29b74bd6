"""The first admin of a fresh install, so it can be logged into at once."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model


@dataclass(frozen=True)
class FirstAdmin:
    username: str
    created: bool
    # The password, only when it was generated just now: it is shown once and never stored.
    generated_password: str | None = None


def do_ensure_admin(username: str = "admin") -> FirstAdmin:
    """Create the first superuser unless one exists; the password comes from
    MEMHUB_ADMIN_PASSWORD, else is generated."""
    users = get_user_model().objects
    existing = users.filter(is_superuser=True).order_by("pk").first()
    if existing is not None:
        return FirstAdmin(existing.get_username(), created=False)
    password = os.environ.get("MEMHUB_ADMIN_PASSWORD", "")
    generated = not password
    if generated:
        password = secrets.token_urlsafe(12)
    users.create_superuser(username=username, email="", password=password)
    return FirstAdmin(username, created=True, generated_password=password if generated else None)
