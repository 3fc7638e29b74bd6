"""The decision on a store-wide proposal (consolidation, distillation): the proposal page's
tick boxes and edits, the index edited as a whole, and the explicit tick a risky proposal
needs (docs/design.md §14.7)."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms

from memapp.lifecycle.models import ProposalChange
from memapp.lifecycle.store_proposals import INDEX_KEY, proposed_index
from memapp.web.lifecycle_forms import DecisionForm


class StoreDecisionForm(DecisionForm):
    """`DecisionForm` whose index change is edited as one text, plus `confirm`: "apply it
    even though it deletes more than a quarter of the store or empties the index"."""

    confirm = forms.BooleanField(required=False)

    def __init__(
        self, *args, pending: Sequence[ProposalChange] = (), index_now: str = "", **kwargs
    ) -> None:
        super().__init__(*args, pending=pending, **kwargs)
        for change in self.pending:
            if change.key == INDEX_KEY:
                for name in ("name", "description", "type"):
                    del self.fields[f"{name}-{change.pk}"]
                body = self.fields[f"body-{change.pk}"]
                body.widget.attrs["rows"] = 16
                body.initial = proposed_index(change, index_now)  # as the review shows it
