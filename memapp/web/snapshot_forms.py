"""Forms of the snapshot pages: strings in, domain values out."""

from __future__ import annotations

import os
from pathlib import Path

from django import forms

from snapshots.actions import ALLOWED
from snapshots.models import Checkout, SnapshotDecision
from snapshots.targets import Target


class CheckoutForm(forms.Form):
    path = forms.CharField(
        max_length=4096,
        label="Checkout path",
        help_text="An absolute path on the memhub host: the directory you start your agent in.",
    )

    def clean_path(self) -> Path:
        raw = self.cleaned_data["path"].strip()
        if "\0" in raw:
            raise forms.ValidationError("The path holds a NUL byte.")
        path = Path(raw)
        if not path.is_absolute():
            raise forms.ValidationError("Give an absolute path (starting with /).")
        path = Path(os.path.normpath(path))
        if not path.is_dir():
            raise forms.ValidationError("There is no such directory on this host.")
        if Checkout.objects.filter(path=str(path)).exists():
            raise forms.ValidationError("This checkout is already registered.")
        return path


class DecisionForm(forms.Form):
    """One decision on one target; the ticked `files` matter to a merge only."""

    decision = forms.ChoiceField(choices=SnapshotDecision.Decision.choices)
    fingerprint = forms.CharField(max_length=64, widget=forms.HiddenInput)
    files = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args, target: Target, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        allowed = ALLOWED[target.status.action]
        self.fields["decision"].choices = [
            (value, label) for value, label in SnapshotDecision.Decision.choices if value in allowed
        ]
        self.fields["files"].choices = [
            (f.name, f.name) for f in target.review.files if f.applicable
        ]
