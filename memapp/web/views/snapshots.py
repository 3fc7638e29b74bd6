"""Snapshot updates: the pending list, checkouts, and the review of one update."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memapp.memdir.index import INDEX_FILENAME
from memapp.stores.discovery import local_owner
from memapp.web.forms import CheckoutForm, SnapshotDecisionForm
from snapshots.actions import (
    DecisionRefused,
    do_decide_snapshot,
    do_register_checkout,
    do_remove_checkout,
    do_rescan_checkout,
)
from snapshots.models import Checkout, SnapshotDecision
from snapshots.targets import get_checkout_for_user, get_target_for_user, targets_for_user

RECENT = 20


def _may_register(user) -> bool:
    """Paths on this host are the local owner's (docs/design.md §1): nobody else may register
    one."""
    owner = local_owner()
    return owner is not None and owner.pk == user.pk


def _list(request: HttpRequest, form: CheckoutForm | None = None) -> HttpResponse:
    targets = targets_for_user(request.user)
    invalid = {}
    for target in targets:
        if target.status.updated_at is None:  # snapshot.json itself is the problem
            invalid.setdefault((target.checkout.pk, target.agent_type), target)
    context = {
        "pending": [t for t in targets if t.pending],
        "waiting": [t for t in targets if t.waiting],
        "invalid": list(invalid.values()),
        "targets": targets,
        "checkouts": Checkout.objects.filter(owner=request.user).select_related("project"),
        "recent": SnapshotDecision.objects.filter(checkout__owner=request.user).select_related(
            "checkout__project", "decided_by"
        )[:RECENT],
        "may_register": _may_register(request.user),
        "form": form or CheckoutForm(),
    }
    return render(request, "snapshots/list.html", context)


@login_required
def snapshot_list(request: HttpRequest) -> HttpResponse:
    return _list(request)


@login_required
@require_POST
def checkout_register(request: HttpRequest) -> HttpResponse:
    if not _may_register(request.user):
        raise Http404("No such page.")
    form = CheckoutForm(request.POST)
    if not form.is_valid():
        return _list(request, form)
    checkout = do_register_checkout(request.user, form.cleaned_data["path"])
    messages.success(request, f"Registered {checkout.path} as a checkout of {checkout.project}.")
    return redirect("snapshot_list")


@login_required
@require_POST
def checkout_rescan(request: HttpRequest, checkout_id: int) -> HttpResponse:
    checkout = get_checkout_for_user(request.user, checkout_id)
    stores = do_rescan_checkout(checkout)
    messages.success(request, f"Rescanned {checkout.path}: {len(stores)} agent memory stores.")
    return redirect("snapshot_list")


@login_required
@require_POST
def checkout_remove(request: HttpRequest, checkout_id: int) -> HttpResponse:
    checkout = get_checkout_for_user(request.user, checkout_id)
    do_remove_checkout(checkout)
    messages.success(request, f"Removed the checkout {checkout.path} (its files are untouched).")
    return redirect("snapshot_list")


def _done_message(decision: SnapshotDecision) -> str:
    label = decision.get_decision_display()
    if decision.decision == SnapshotDecision.Decision.DISMISS:
        return "Dismissed for now: this update comes back when the snapshot changes again."
    if decision.applied_at is None:
        return (
            f"Decision recorded ({label}). The agent's machine applies it with "
            f"`memhub-agent snapshot apply {decision.agent_type}`."
        )
    written = len(decision.result.get("written", []))
    removed = len(decision.result.get("removed", []))
    lines = len(decision.result.get("index_entries", []))
    index = f", {lines} index line{'s' * (lines != 1)} added" if lines else ""
    return (
        f"Done: {label} — {written} file{'s' * (written != 1)} written, {removed} removed{index}; "
        f"the memory is now synced from {decision.updated_at}."
    )


def _ticked_by_default(review) -> list[str]:
    """Every file a merge can take, except a changed index: a merge adds the index lines of
    the files it takes, so the local index (with its own entries) is kept unless ticked."""
    return [
        f.name
        for f in review.files
        if f.applicable and not (f.name == INDEX_FILENAME and f.change == "changed")
    ]


def _asks_first(form: SnapshotDecisionForm, request: HttpRequest) -> bool:
    """Replace deletes local memories: it is carried out once the person has seen which."""
    replace = form.cleaned_data["decision"] == SnapshotDecision.Decision.REPLACE
    return replace and request.POST.get("confirm") != "yes"


@login_required
def snapshot_review(
    request: HttpRequest, checkout_id: int, agent_type: str, scope: str
) -> HttpResponse:
    target = get_target_for_user(request.user, checkout_id, agent_type, scope)
    if request.method == "POST":
        form = SnapshotDecisionForm(request.POST, target=target)
        if form.is_valid() and _asks_first(form, request):
            review = target.review
            context = {
                "target": target,
                "form": form,
                "removed": [f for f in review.by_change("removed") if f.replace_removes],
                "changed": review.by_change("changed"),
            }
            return render(request, "snapshots/confirm_replace.html", context)
        if form.is_valid():
            try:
                decision = do_decide_snapshot(
                    request.user,
                    target,
                    form.cleaned_data["decision"],
                    form.cleaned_data["fingerprint"],
                    form.cleaned_data["files"],
                )
            except DecisionRefused as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, _done_message(decision))
            return redirect(request.path)
    else:
        review = target.review
        form = SnapshotDecisionForm(
            target=target,
            initial={
                "fingerprint": review.fingerprint,
                "files": _ticked_by_default(review),
            },
        )
    history = SnapshotDecision.objects.filter(
        checkout=target.checkout, agent_type=agent_type, scope=scope
    ).select_related("decided_by")
    review = target.review
    context = {
        "target": target,
        "review": review,
        "form": form,
        "ticked": set(form["files"].value() or []),
        "shown": [f for f in review.files if f.change in ("added", "changed")],
        "removed": review.by_change("removed"),
        "unchanged": review.by_change("unchanged"),
        "problems": [f for f in review.files if f.problems or f.secrets],
        "history": history,
    }
    return render(request, "snapshots/review.html", context)
