"""Forms turn what a person typed into memory fields."""

from __future__ import annotations

from django import forms
from django.contrib.auth import forms as auth_forms
from django.core.exceptions import ValidationError

from memapp.memdir.frontmatter import MEMORY_TYPES, Memory
from memapp.memdir.index import MAX_ENTRY_CHARS

TYPE_CHOICES = [("", "untyped")] + [(t, t) for t in MEMORY_TYPES]


def unknown_type(memory: Memory) -> str | None:
    """The type a file gives that is not one of MEMORY_TYPES (`type: decision`), as written:
    the memory is untyped, and saving keeps the value (docs/design.md §2)."""
    if memory.type is not None:
        return None
    meta = memory.frontmatter.get("metadata")
    for value in (
        memory.frontmatter.get("type"),
        meta.get("type") if isinstance(meta, dict) else None,
    ):
        if value is not None and str(value).strip():
            return str(value)
    return None


def unknown_type_warning(value: str) -> str:
    return (
        f'Type "{value}" is not one memhub knows ({", ".join(MEMORY_TYPES)}): agents and filters '
        "treat this memory as untyped. Saving keeps it as written; pick a type to replace it."
    )


def one_line(value: str) -> None:
    if "\n" in value or "\r" in value:
        raise ValidationError("Keep this to one line: recall reads it as a one-line hook.")


class MemoryForm(forms.Form):
    name = forms.CharField(max_length=200, validators=[one_line])
    description = forms.CharField(
        max_length=500,
        validators=[one_line],
        help_text=f"One line under ~{MAX_ENTRY_CHARS} characters: agents decide from it whether "
        "the memory is relevant.",
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

    def __init__(self, *args, unknown_type: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.unknown_type = unknown_type
        if unknown_type:  # "untyped" would hide the value the file keeps
            choices = [("", f"{unknown_type} (unknown type, kept)"), *TYPE_CHOICES[1:]]
            self.fields["type"].choices = choices  # type: ignore[attr-defined]

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


class PasswordChangeForm(auth_forms.PasswordChangeForm):
    """Django's, but what the password validators say about the new password (too short, too
    common) is shown under "New password", not under "New password again"."""

    def clean(self):
        self.validate_passwords("new_password1", "new_password2")
        self.validate_password_for_user(self.user, "new_password1")
        return super(auth_forms.SetPasswordForm, self).clean()
