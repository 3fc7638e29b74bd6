"""The decision on a proposal: which changes to approve, each possibly edited first."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.proposals import MEMORY_TYPES
from memapp.stores.models import Store
from memapp.web.forms import one_line

FIELDS = ("name", "description", "type", "scope", "body")
SCOPES = [
    (Store.Kind.PRIVATE, "private (only you)"),
    (Store.Kind.TEAM, "team (every member of the project)"),
]


class DecisionForm(forms.Form):
    """Tick boxes (`changes`) and, per change, optional edits of name, description, type,
    body and, for a new memory of a project, the store it goes to (`name-<id>`, …,
    `scope-<id>`). The cleaned data are the ticked ids and the edits by id, as
    `do_apply_proposal` takes them. The same form previews (decision `preview`): the page
    is drawn again with the ticks and edits kept, as approving would write them."""

    changes = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple, required=False, choices=()
    )

    def __init__(
        self, *args, pending: Sequence[ProposalChange] = (), store: Store | None = None, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.pending = list(pending)
        self.store = store
        self.fields["changes"].choices = [(str(c.pk), c.key) for c in self.pending]
        for change in self.pending:
            # A deletion, or a whole file from an agent's inbox: nothing to edit field by field.
            if change.action == ProposalChange.Action.DELETE or (
                change.proposal.kind == Proposal.Kind.INBOX
            ):
                continue
            self.fields[f"name-{change.pk}"] = forms.CharField(
                max_length=200, required=False, validators=[one_line], initial=change.name
            )
            self.fields[f"description-{change.pk}"] = forms.CharField(
                max_length=500, required=False, validators=[one_line], initial=change.description
            )
            types = [(t, t) for t in MEMORY_TYPES]
            if not change.type:
                types.insert(0, ("", "untyped"))
            self.fields[f"type-{change.pk}"] = forms.ChoiceField(
                choices=types, required=False, initial=change.type
            )
            if self._can_move(change):
                self.fields[f"scope-{change.pk}"] = forms.ChoiceField(
                    choices=SCOPES, required=False, initial=change.scope or store.kind
                )
            self.fields[f"body-{change.pk}"] = forms.CharField(
                widget=forms.Textarea(attrs={"rows": 10}),
                required=False,
                strip=False,
                initial=change.body,
            )

    def _can_move(self, change: ProposalChange) -> bool:
        """A new memory of a project's private or team store may go to the other one."""
        store = self.store
        return (
            change.action == ProposalChange.Action.CREATE
            and store is not None
            and store.project_id is not None
            and store.kind in (Store.Kind.PRIVATE, Store.Kind.TEAM)
        )

    def clean_changes(self) -> list[int]:
        return [int(pk) for pk in self.cleaned_data["changes"]]

    def clean(self) -> dict:
        cleaned = super().clean()
        for change in self.pending:
            scope = cleaned.get(f"scope-{change.pk}")
            memory_type = cleaned.get(f"type-{change.pk}") or change.type
            if scope == Store.Kind.TEAM and memory_type == "user":
                self.add_error(
                    f"scope-{change.pk}", "A user memory is always private: keep it private."
                )
        return cleaned

    def edits(self, *, unticked: bool = False) -> dict[int, dict[str, str]]:
        """The edited fields of the ticked changes (of every pending one with `unticked`, for
        the preview), after is_valid: a field with an error is left out. A scope that is the
        proposal's own store is no move."""
        edits = {}
        for change in self.pending:
            if not unticked and change.pk not in self.cleaned_data["changes"]:
                continue
            fields = {}
            for name in FIELDS:
                key = f"{name}-{change.pk}"
                if key in self.cleaned_data and key in self.data:
                    fields[name] = self.cleaned_data[key]
            if self.store is not None and fields.get("scope") == self.store.kind:
                fields["scope"] = ""
            edits[change.pk] = fields
        return edits

    def bound_fields(self, change: ProposalChange) -> dict[str, forms.BoundField]:
        """The edit fields of one change, for the template."""
        return {
            name: self[f"{name}-{change.pk}"]
            for name in FIELDS
            if f"{name}-{change.pk}" in self.fields
        }
