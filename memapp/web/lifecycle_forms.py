"""The decision on a proposal: which changes to approve, each possibly edited first."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms

from memapp.lifecycle.models import ProposalChange
from memapp.web.forms import one_line


class DecisionForm(forms.Form):
    """Tick boxes (`changes`) and, per change, optional edits of name, description and body
    (`name-<id>`, `description-<id>`, `body-<id>`). The cleaned data are the ticked ids and
    the edits by id, as `do_apply_proposal` takes them."""

    changes = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple, required=False, choices=()
    )

    def __init__(self, *args, pending: Sequence[ProposalChange] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pending = list(pending)
        self.fields["changes"].choices = [(str(c.pk), c.key) for c in self.pending]
        for change in self.pending:
            if change.action == ProposalChange.Action.DELETE:
                continue
            self.fields[f"name-{change.pk}"] = forms.CharField(
                max_length=200, required=False, validators=[one_line], initial=change.name
            )
            self.fields[f"description-{change.pk}"] = forms.CharField(
                max_length=500, required=False, validators=[one_line], initial=change.description
            )
            self.fields[f"body-{change.pk}"] = forms.CharField(
                widget=forms.Textarea(attrs={"rows": 10}),
                required=False,
                strip=False,
                initial=change.body,
            )

    def clean_changes(self) -> list[int]:
        return [int(pk) for pk in self.cleaned_data["changes"]]

    def edits(self) -> dict[int, dict[str, str]]:
        """The edited fields of the ticked changes (after is_valid)."""
        edits = {}
        for change in self.pending:
            if change.pk not in self.cleaned_data["changes"]:
                continue
            fields = {}
            for name in ("name", "description", "body"):
                key = f"{name}-{change.pk}"
                if key in self.cleaned_data and key in self.data:
                    fields[name] = self.cleaned_data[key]
            edits[change.pk] = fields
        return edits

    def bound_fields(self, change: ProposalChange) -> dict[str, forms.BoundField]:
        """The edit fields of one change, for the template."""
        return {
            name: self[f"{name}-{change.pk}"]
            for name in ("name", "description", "body")
            if f"{name}-{change.pk}" in self.fields
        }
