"""Forms turn what a person typed into memory fields."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from memapp.memdir.frontmatter import MEMORY_TYPES

TYPE_CHOICES = [("", "untyped")] + [(t, t) for t in MEMORY_TYPES]


def one_line(value: str) -> None:
    if "\n" in value or "\r" in value:
        raise ValidationError("Keep this to one line: recall reads it as a one-line hook.")


class MemoryForm(forms.Form):
    name = forms.CharField(max_length=200, validators=[one_line])
    description = forms.CharField(
        max_length=500,
        validators=[one_line],
        help_text="One line: agents decide from it whether the memory is relevant.",
    )
    type = forms.ChoiceField(choices=TYPE_CHOICES, required=False)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 14}), required=False, strip=False)
    index_line = forms.CharField(
        label="Index line",
        max_length=1000,
        required=False,
        strip=False,
        validators=[one_line],
        help_text="This memory's line in MEMORY.md, which agents load every session. It stays "
        "exactly as it is unless you change it here; empty writes it from the name and "
        "description.",
    )
    base_sha256 = forms.CharField(widget=forms.HiddenInput, required=False)

    def clean_type(self) -> str | None:
        return self.cleaned_data["type"] or None

    def clean_body(self) -> str:
        # Browsers submit a textarea with CRLF line endings; memory files use LF, as agents write.
        return self.cleaned_data["body"].replace("\r\n", "\n")


class FilterForm(forms.Form):
    """The store page's filters; every field optional, bad values simply ignored."""

    SORTS = [("", "best match"), ("newest", "newest"), ("name", "name"), ("type", "type")]
    AGES = [
        ("", "any age"),
        ("1", "today or yesterday"),
        ("7", "this week"),
        ("30", "this month"),
        ("stale", "stale"),
    ]
    PROBLEMS = [
        ("", "any"),
        ("broken", "broken frontmatter"),
        ("why_how", "missing Why/How"),
        ("unindexed", "not in the index"),
        ("dangling", "dangling links"),
        ("relative_dates", "relative dates"),
        ("never_recalled", "never recalled"),
    ]

    q = forms.CharField(required=False, label="Search")
    type = forms.ChoiceField(
        choices=[("", "any type")] + TYPE_CHOICES[1:] + [("untyped", "untyped")], required=False
    )
    scope = forms.ChoiceField(
        choices=[("", "any scope"), ("private", "private"), ("team", "team"), ("agent", "agent")],
        required=False,
    )
    age = forms.ChoiceField(choices=AGES, required=False)
    problem = forms.ChoiceField(choices=PROBLEMS, required=False)
    sort = forms.ChoiceField(choices=SORTS, required=False)
