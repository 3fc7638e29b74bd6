"""Sessions in, memories out: the proposals queue, sessions and past-context search
(docs/design.md §14). Everything here is the signed-in person's own."""

from __future__ import annotations

import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memapp.lifecycle.access import (
    get_change_for_user,
    get_proposal_for_user,
    get_session_for_user,
)
from memapp.lifecycle.models import (
    ExtractionRun,
    Proposal,
    ProposalChange,
    Session,
    SessionSummary,
)
from memapp.lifecycle.past_context import search_past_context
from memapp.lifecycle.proposals import (
    AccessLost,
    EditRefused,
    ProposalClosed,
    ProposalResult,
    change_diff,
    do_apply_proposal,
    do_rebase_change,
    do_reject_proposal,
    revise_change,
)
from memapp.lifecycle.sessions import do_forget_session, skip_sentences
from memapp.lifecycle.store_proposals import do_rebase_store_change, is_store_wide
from memapp.stores.models import Store
from memapp.web.forms import ProposalDecisionForm
from memapp.web.markdown import render_markdown
from memapp.web.views.consolidation import store_proposal_detail

RECENT = 20
PAGE_SIZE = 50


@login_required
def proposal_list(request: HttpRequest) -> HttpResponse:
    proposals = Proposal.objects.visible_to(request.user).select_related("store__project")
    runs = ExtractionRun.objects.filter(
        owner=request.user, store__in=Store.objects.visible_to(request.user).values("pk")
    ).select_related("store__project")
    context = {
        "pending": proposals.filter(status=Proposal.Status.PENDING).prefetch_related(
            "changes", "sessions"
        ),
        "decided": proposals.exclude(status=Proposal.Status.PENDING).select_related("decided_by")[
            :RECENT
        ],
        "runs": runs[:RECENT],
        "busy": runs.filter(
            status__in=[ExtractionRun.Status.QUEUED, ExtractionRun.Status.RUNNING]
        ).count(),
        "has_key": bool(settings.ANTHROPIC_API_KEY),
    }
    return render(request, "lifecycle/proposals.html", context)


def _sources(proposal: Proposal) -> list[dict]:
    """The lines of conversation a proposal came from, from sessions that still exist."""
    sessions = {s.pk: s for s in Session.objects.filter(owner=proposal.owner)}
    shown = []
    for source in proposal.sources:
        session = sessions.get(source.get("session"))
        lines = []
        if session is not None and source.get("lines"):
            lines = list(
                session.entries.filter(seq__in=source["lines"], gate_checked=True).order_by("seq")
            )
        shown.append({"source": source, "session": session, "lines": lines})
    return shown


def _result_message(request: HttpRequest, result: ProposalResult) -> None:
    if result.applied:
        messages.success(request, f"Applied: {', '.join(result.applied)}.")
    if result.conflicts:
        messages.error(
            request,
            f"Changed since proposed, nothing written: {', '.join(result.conflicts)}. "
            "Both versions are shown below.",
        )
    if result.refused:
        messages.error(
            request,
            f"Refused, so nothing was written: {', '.join(result.refused)} (see below). A "
            "proposal is applied whole or not at all.",
        )


def _previewed(request: HttpRequest, proposal: Proposal, form: ProposalDecisionForm) -> dict:
    """Each pending change as the person's edits leave it (nothing saved): change id → the
    store it goes to; an edit that cannot be written is a form error instead."""
    stores = {}
    if not form.is_bound:
        return stores
    form.is_valid()  # the edits without an error are shown, whatever went wrong
    edits = form.edits(unticked=True)
    for change in form.pending:
        edit = edits.get(change.pk, {})
        try:
            stores[change.pk] = revise_change(proposal.store, request.user, change, edit).store
        except EditRefused as exc:
            form.add_error(None, f"{change.key}: {exc}")
    return stores


def _asks_to_reject(request: HttpRequest, proposal: Proposal) -> bool:
    """Reject closes a pending proposal for good: its first POST asks, the second (`sure`) acts."""
    return (
        request.POST.get("decision") == "reject"
        and request.POST.get("sure") != "yes"
        and proposal.status == Proposal.Status.PENDING
    )


@login_required
def proposal_detail(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = get_proposal_for_user(request.user, proposal_id)
    if request.method == "POST" and _asks_to_reject(request, proposal):
        return render(request, "lifecycle/reject.html", {"proposal": proposal})
    if is_store_wide(proposal):
        return store_proposal_detail(request, proposal)
    changes = list(proposal.changes.all())
    pending = [c for c in changes if c.status == ProposalChange.Status.PENDING]
    store = proposal.store
    form = ProposalDecisionForm(
        pending=pending, store=store, initial={"changes": [str(c.pk) for c in pending]}
    )
    decision = request.POST.get("decision", "preview")
    if request.method == "POST":
        form = ProposalDecisionForm(request.POST, pending=pending, store=store)
        try:
            if decision == "reject":
                do_reject_proposal(proposal, request.user)
                messages.success(request, "Rejected: nothing was written.")
                return redirect("proposals")
            if decision == "approve" and form.is_valid() and not form.cleaned_data["changes"]:
                form.add_error("changes", "Tick the changes to approve.")
            if decision == "approve" and form.is_valid():
                result = do_apply_proposal(
                    proposal, request.user, form.cleaned_data["changes"], form.edits()
                )
                _result_message(request, result)
                return redirect("proposal", proposal_id=proposal.pk)
        except ProposalClosed as exc:
            messages.error(request, str(exc))
            return redirect("proposal", proposal_id=proposal.pk)
        except AccessLost as exc:
            messages.error(request, f"Not approved: {exc}.")
            return redirect("proposals")
    moved = _previewed(request, proposal, form)
    context = {
        "proposal": proposal,
        "diffs": [
            (
                change_diff(change, moved.get(change.pk)),
                form.bound_fields(change) if change in pending else {},
                moved[change.pk] if moved.get(change.pk, store) != store else None,
            )
            for change in changes
        ],
        "form": form,
        "ticked": set(form["changes"].value() or []),
        "sources": _sources(proposal),
    }
    return render(request, "lifecycle/proposal.html", context)


@login_required
@require_POST
def change_rebase(request: HttpRequest, change_id: int) -> HttpResponse:
    change = get_change_for_user(request.user, change_id)
    if change.status == ProposalChange.Status.CONFLICT:
        rebase = do_rebase_store_change if is_store_wide(change.proposal) else do_rebase_change
        rebase(change)
        messages.success(request, f"{change.key}: now compared with the current version.")
    return redirect("proposal", proposal_id=change.proposal_id)


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    sessions = Session.objects.visible_to(request.user).select_related("project")
    page = Paginator(sessions, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"page": page, "retention_days": settings.MEMHUB_TRANSCRIPT_RETENTION_DAYS}
    return render(request, "lifecycle/sessions.html", context)


@login_required
def session_detail(request: HttpRequest, session_pk: int) -> HttpResponse:
    session = get_session_for_user(request.user, session_pk)
    entries = session.entries.filter(gate_checked=True).order_by("seq")
    summary = SessionSummary.objects.filter(session=session, updates__gt=0).first()
    context = {
        "session": session,
        "summary": summary,
        # The summary's sections as headings under the page's own (h1, then "Summary" h2).
        "summary_html": render_markdown(re.sub(r"(?m)^# ", "### ", summary.text))
        if summary
        else "",
        "skip_reasons": skip_sentences(session.skipped),
        "entries": entries,
        "unchecked": session.entries.filter(gate_checked=False).count(),
        "proposals": Proposal.objects.visible_to(request.user).filter(sessions=session),
    }
    return render(request, "lifecycle/session.html", context)


@login_required
def session_forget(request: HttpRequest, session_pk: int) -> HttpResponse:
    session = get_session_for_user(request.user, session_pk)
    if request.method == "POST":
        count = do_forget_session(session)
        messages.success(request, f"Forgot the session {session}: {count} entries deleted.")
        return redirect("sessions")
    return render(request, "lifecycle/session_forget.html", {"session": session})


@login_required
def past_context(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()
    result = search_past_context(request.user, query) if query else None
    return render(request, "lifecycle/search.html", {"query": query, "result": result})
