"""Consolidation on the store page ("Consolidate now" and its progress), a store's daily logs
as a timeline, and the review of a store-wide proposal (docs/design.md §14.7–§14.8)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memapp.lifecycle.consolidation import ACTIVE, do_cancel_consolidation
from memapp.lifecycle.daily_logs import has_logs, store_logs
from memapp.lifecycle.models import ConsolidationRun, Proposal, ProposalChange
from memapp.lifecycle.proposals import AccessLost, ProposalClosed, do_reject_proposal
from memapp.lifecycle.status import consolidation_status
from memapp.lifecycle.store_proposals import (
    ApplyRefused,
    NeedsConfirmation,
    default_selection,
    do_apply_store_proposal,
    index_text,
    review_store_proposal,
)
from memapp.lifecycle.tasks import request_consolidation
from memapp.memdir.daily_logs import log_day
from memapp.stores.access import get_store_for_user
from memapp.web.forms import StoreDecisionForm

PANEL = "lifecycle/partials/consolidation_panel.html"


def _panel(request: HttpRequest, store) -> HttpResponse:
    return render(request, PANEL, {"status": consolidation_status(store, request.user)})


@login_required
@require_POST
def consolidate_now(request: HttpRequest, store_id: int) -> HttpResponse:
    """Queue a consolidation that skips the time and session gates (Claude Code's `/dream`)."""
    store = get_store_for_user(request.user, store_id)
    status, _run = request_consolidation(
        store, trigger=ConsolidationRun.Trigger.MANUAL, requested_by=request.user
    )
    if request.htmx:
        return _panel(request, store)
    if status == "queued":
        messages.success(request, "Consolidation started: it runs in the background.")
    else:
        messages.info(request, "A consolidation of this store is already under way.")
    return redirect(reverse("store", kwargs={"store_id": store.pk}) + "#consolidation")


@login_required
def cancel_consolidation(request: HttpRequest, store_id: int) -> HttpResponse:
    """Asks first (GET), then cancels the store's queued or running consolidation (POST): a
    queued run never starts, a running one stops at its next step with the lock's mtime put
    back and nothing proposed (docs/design.md §14.2)."""
    store = get_store_for_user(request.user, store_id)
    back = reverse("store", kwargs={"store_id": store.pk}) + "#consolidation"
    if request.method != "POST":
        active = ConsolidationRun.objects.filter(store=store, status__in=ACTIVE).first()
        context = {"store": store, "run": active, "back": back}
        return render(request, "lifecycle/consolidation_cancel.html", context)
    run = do_cancel_consolidation(store)
    if run is None:
        messages.info(request, "No consolidation of this store waits or runs: nothing to cancel.")
    elif run.status == ConsolidationRun.Status.DONE:
        messages.success(request, f"Consolidation #{run.pk} cancelled before it started.")
    else:
        messages.success(
            request,
            f"Consolidation #{run.pk} stops at its next step: nothing it found is proposed, and "
            "the time of the last run is put back.",
        )
    return redirect(back)


@login_required
def consolidation_panel(request: HttpRequest, store_id: int) -> HttpResponse:
    """The store page's consolidation card alone: what htmx asks for while a run is busy."""
    return _panel(request, get_store_for_user(request.user, store_id))


@login_required
def daily_logs(request: HttpRequest, store_id: int) -> HttpResponse:
    """The store's daily logs, one month at a time, newest day first."""
    store = get_store_for_user(request.user, store_id)
    every = store_logs(store) if has_logs(store) else []
    months = sorted({f"{day.day:%Y-%m}" for day in every}, reverse=True)
    month = request.GET.get("month", "")
    if month not in months:
        month = months[0] if months else ""
    context = {
        "store": store,
        "months": months,
        "month": month,
        "days": [day for day in every if f"{day.day:%Y-%m}" == month],
        "keeps_logs": has_logs(store),
        "waiting": sum(day.pending for day in every),
    }
    return render(request, "lifecycle/daily_logs.html", context)


def _decide(request: HttpRequest, proposal: Proposal, form: StoreDecisionForm) -> bool:
    """Carry out the person's decision; whether it is done (else the form says why)."""
    decision = request.POST.get("decision")
    if decision not in ("approve", "reject"):
        return False  # "Update preview": the page again, with the ticks and edits kept
    try:
        if decision == "reject":
            do_reject_proposal(proposal, request.user)
            messages.success(request, "Rejected: nothing was written.")
            return True
        if not form.is_valid():
            return False
        if not form.cleaned_data["changes"]:
            form.add_error("changes", "Tick the changes to approve.")
            return False
        result = do_apply_store_proposal(
            proposal,
            request.user,
            form.cleaned_data["changes"],
            form.edits(),
            confirm=form.cleaned_data["confirm"],
        )
    except ProposalClosed as exc:
        messages.error(request, str(exc))
        return True
    except NeedsConfirmation as exc:
        form.add_error("confirm", f"This proposal {exc}: tick the box to apply it anyway.")
        return False
    except ApplyRefused as exc:
        messages.error(request, f"Nothing was written: {exc}.")
        return False
    if result.conflicts:
        messages.error(
            request,
            f"Changed since proposed, so nothing was written: {', '.join(result.conflicts)}. "
            "Both versions are shown below.",
        )
    else:
        messages.success(request, f"Applied {len(result.applied)} changes.")
    return True


def store_proposal_detail(request: HttpRequest, proposal: Proposal) -> HttpResponse:
    """The whole-store review of a consolidation or distillation proposal."""
    pending = list(proposal.changes.filter(status=ProposalChange.Status.PENDING))
    ticked = [str(pk) for pk in default_selection(pending)]
    index_now = index_text(proposal.store)
    form = StoreDecisionForm(
        pending=pending, index_now=index_now, store=proposal.store, initial={"changes": ticked}
    )
    selected, edits = None, None
    if request.method == "POST":
        form = StoreDecisionForm(
            request.POST, pending=pending, index_now=index_now, store=proposal.store
        )
        try:
            if _decide(request, proposal, form):
                return redirect("proposal", proposal_id=proposal.pk)
        except AccessLost as exc:
            messages.error(request, f"Not approved: {exc}.")
            return redirect("proposals")
        selected = [int(pk) for pk in form["changes"].value() or [] if str(pk).isdigit()]
        form.is_valid()  # the edits without an error are shown, whatever went wrong
        edits = form.edits(unticked=True)
    review = review_store_proposal(proposal, selected, edits, request.user)
    run = proposal.consolidation_runs.first()
    context = {
        "proposal": proposal,
        "review": review,
        "changes": [(view, form.bound_fields(view.change)) for view in review.changes],
        "form": form,
        "ticked": {str(pk) for pk in review.selected},
        "run": run,
        "found": {
            name: (run.findings.get(proposal.kind, {}) if run else {}).get(name, [])
            for name in ("duplicates", "left_out", "unresolved", "skipped")
        },
        "log_sources": [
            (s["log"], log_day(s["log"]), s["from"], s["to"])
            for s in proposal.sources
            if isinstance(s, dict) and log_day(str(s.get("log", "")))
        ],
    }
    return render(request, "lifecycle/store_proposal.html", context)
