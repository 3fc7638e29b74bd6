"""Invitations: staff invite a person by email or by link to some projects; the link works
once, until it expires or is revoked, and makes an account (docs/design.md §26)."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from memapp.stores.members import do_add_member
from memapp.stores.models import Invitation, Project
from memapp.stores.tokens import hash_token


class InvitationRefused(Exception):
    """The invitation cannot be used: the message tells the person why and what to do."""


def do_create_invitation(by, projects, email: str = "") -> tuple[Invitation, str]:
    """The new invitation and its secret (for the link), which is never stored nor shown again."""
    secret = secrets.token_urlsafe(24)
    invitation = Invitation.objects.create(
        email=email.strip(),
        token_hash=hash_token(secret),
        created_by=by,
        expires_at=timezone.now() + timedelta(days=settings.MEMHUB_INVITATION_DAYS),
    )
    invitation.projects.set(projects)
    return invitation, secret


def do_revoke_invitation(invitation: Invitation) -> None:
    if invitation.revoked_at is None and invitation.accepted_at is None:
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])


def usable_invitation(secret: str) -> Invitation:
    """The invitation the link's secret opens. Raises InvitationRefused."""
    invitation = Invitation.objects.filter(token_hash=hash_token(secret)).first()
    if invitation is None:
        raise InvitationRefused("This invitation link is not valid: check you copied all of it.")
    if invitation.revoked_at is not None:
        raise InvitationRefused("This invitation was withdrawn. Ask the person who sent it.")
    if invitation.accepted_at is not None:
        raise InvitationRefused(
            "This invitation was already used. Sign in with the account it made, or ask for "
            "a new one."
        )
    if invitation.expires_at <= timezone.now():
        raise InvitationRefused(
            f"This invitation expired on {invitation.expires_at:%Y-%m-%d}. Ask for a new one."
        )
    return invitation


def do_accept_invitation(secret: str, username: str, password: str, name: str = ""):
    """Make the account and add it to the invitation's projects, once. Raises
    InvitationRefused (no account is made)."""
    with transaction.atomic():
        invitation = usable_invitation(secret)
        # Taken under the row's lock: two tabs submitting the same link make one account.
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if invitation.accepted_at is not None:
            raise InvitationRefused("This invitation was already used.")
        first, _, last = name.strip().partition(" ")
        user = get_user_model().objects.create_user(
            username=username,
            password=password,
            email=invitation.email,
            first_name=first[:150],
            last_name=last[:150],
        )
        invitation.accepted_at = timezone.now()
        invitation.accepted_by = user
        invitation.save(update_fields=["accepted_at", "accepted_by"])
        projects: list[Project] = list(invitation.projects.all())
        for project in projects:
            do_add_member(project, user, invitation.created_by)
    return user


def do_accept_invitations_for(user) -> int:
    """Accept the invitations waiting for `user`'s email (verified by single sign-on): they
    join those projects. Returns how many."""
    if not user.email:
        return 0
    accepted = 0
    with transaction.atomic():
        waiting = pending_invitations().select_for_update(of=("self",))
        for invitation in waiting.filter(email__iexact=user.email):
            for project in invitation.projects.all():
                do_add_member(project, user, invitation.created_by)
            invitation.accepted_at = timezone.now()
            invitation.accepted_by = user
            invitation.save(update_fields=["accepted_at", "accepted_by"])
            accepted += 1
    return accepted


def pending_invitations():
    now = timezone.now()
    return (
        Invitation.objects.filter(accepted_at=None, revoked_at=None, expires_at__gt=now)
        .select_related("created_by")
        .prefetch_related("projects")
    )
