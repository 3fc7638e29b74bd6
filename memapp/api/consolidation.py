"""Approving a store-wide proposal (consolidation, distillation) through the agent API: the
same all-or-nothing apply as the review page, its refusals as API errors (docs/design.md
§14.6–§14.7)."""

from __future__ import annotations

from memapp.api.errors import ApiError
from memapp.lifecycle.models import Proposal
from memapp.lifecycle.proposals import ApplyResult
from memapp.lifecycle.store_changes import (
    ApplyFailed,
    ApplyRefused,
    NeedsConfirmation,
    StoreBusy,
    do_apply_store_proposal,
)


def apply_store_proposal(proposal: Proposal, user, data: dict) -> ApplyResult:
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
