"""Fetch-and-authorize: sessions and proposals are their owner's alone (staff included), and
only while the owner may still see the store they belong to (`visible_to`, asked on every
request). Anyone else gets a 404, never a 403, so their existence does not leak."""

from __future__ import annotations

from django.http import Http404

from memapp.lifecycle.models import Proposal, ProposalChange, Session


def get_session_for_user(user, session_pk: int) -> Session:
    try:
        return (
            Session.objects.visible_to(user).select_related("project", "store").get(pk=session_pk)
        )
    except Session.DoesNotExist:
        raise Http404("No such session.") from None


def get_agent_session_for_user(user, session_id: str) -> Session:
    """By the agent's own session id."""
    try:
        return Session.objects.visible_to(user).get(session_id=session_id)
    except Session.DoesNotExist:
        raise Http404("No such session.") from None


def get_proposal_for_user(user, proposal_pk: int) -> Proposal:
    try:
        return (
            Proposal.objects.visible_to(user).select_related("store__project").get(pk=proposal_pk)
        )
    except Proposal.DoesNotExist:
        raise Http404("No such proposal.") from None


def get_change_for_user(user, change_pk: int) -> ProposalChange:
    try:
        return ProposalChange.objects.select_related("proposal__store__project").get(
            pk=change_pk, proposal__in=Proposal.objects.visible_to(user).values("pk")
        )
    except ProposalChange.DoesNotExist:
        raise Http404("No such change.") from None
