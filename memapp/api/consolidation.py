"""Consolidation through the agent API (docs/design.md §14.6–§14.7): "Consolidate now" and
cancelling a queued or running run (`/api/v1/stores/<id>/consolidate`), and approving a
store-wide proposal (consolidation, distillation) with the same all-or-nothing apply as the
review page, its refusals as API errors."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api.errors import ApiError
from memapp.api.serializers import Text
from memapp.lifecycle.consolidation import do_cancel_consolidation
from memapp.lifecycle.models import ConsolidationRun, Proposal
from memapp.lifecycle.proposals import ProposalResult
from memapp.lifecycle.store_proposals import (
    ApplyFailed,
    ApplyRefused,
    NeedsConfirmation,
    StoreBusy,
    do_apply_store_proposal,
)
from memapp.lifecycle.tasks import request_consolidation
from memapp.stores.access import get_store_for_user


def apply_store_proposal(proposal: Proposal, user, data: dict) -> ProposalResult:
    """`do_apply_store_proposal` with the approve body's `changes` and `confirm`; a refusal
    is a 409 (risky without `confirm`, the directory busy), 503 (failed halfway and undone)
    or 422 (a file the write path refuses)."""
    try:
        return do_apply_store_proposal(
            proposal, user, data["changes"], confirm=data.get("confirm", False)
        )
    except NeedsConfirmation as exc:
        risks = [{"code": r.code, "message": r.message} for r in exc.risks]
        raise ApiError(
            409,
            "needs_confirmation",
            f"This proposal {exc}; send `confirm: true` to apply it anyway.",
            {"risks": risks},
        ) from None
    except StoreBusy as exc:
        raise ApiError(409, "store_busy", str(exc)) from None
    except ApplyFailed as exc:
        raise ApiError(503, "apply_failed", str(exc)) from None
    except ApplyRefused as exc:
        raise ApiError(422, "refused", str(exc)) from None


class ConsolidationRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = Text(help_text="queued, running, done or failed")
    trigger = Text(help_text="schedule or manual")
    outcome = Text(allow_blank=True)
    gate = Text(allow_blank=True, help_text="passed, or why it was skipped")
    cancel_requested = serializers.BooleanField()


class ConsolidateResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=["queued", "busy", "cancelled", "cancelling"],
        help_text="queued: a new run; busy: the run already waiting or running serves it; "
        "cancelled: a queued run ended; cancelling: a running run stops at its next step.",
    )
    run = ConsolidationRunSerializer()


def _run_data(run: ConsolidationRun) -> dict:
    return {
        "id": run.pk,
        "status": run.status,
        "trigger": run.trigger,
        "outcome": run.outcome,
        "gate": run.gate,
        "cancel_requested": run.cancel_requested,
    }


@extend_schema(
    methods=["POST"],
    operation_id="consolidateNow",
    summary="Consolidate a store now (skips the time and session gates)",
    tags=["proposals"],
    request=None,
    responses=ConsolidateResultSerializer,
)
@extend_schema(
    methods=["DELETE"],
    operation_id="cancelConsolidation",
    summary="Cancel a store's queued or running consolidation",
    tags=["proposals"],
    responses=ConsolidateResultSerializer,
)
@api_view(["POST", "DELETE"])
def consolidate(request: Request, store_id: int) -> Response:
    """POST: "Consolidate now", as on the store page. DELETE: cancel the run that waits or
    runs; a running one stops at its next step with the lock's mtime put back (404 when
    none is active)."""
    store = get_store_for_user(request.user, store_id)
    if request.method == "POST":
        status, run = request_consolidation(
            store, trigger=ConsolidationRun.Trigger.MANUAL, requested_by=request.user
        )
        return Response({"status": status, "run": _run_data(run)})
    run = do_cancel_consolidation(store)
    if run is None:
        raise ApiError(404, "not_found", "No consolidation of this store waits or runs.")
    status = "cancelled" if run.status == ConsolidationRun.Status.DONE else "cancelling"
    return Response({"status": status, "run": _run_data(run)})
