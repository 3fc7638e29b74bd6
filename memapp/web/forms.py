"""Every form of the site: what a person typed turned into domain values, one section per
area (memories, proposals, store-wide proposals, snapshots, joining, the admin pages).

A flag's value is always validated by its own `FlagSpec.clean`, so the settings page, the
Django admin and `set_flag` accept and refuse exactly the same values with the same words.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django import forms
from django.contrib.auth import forms as auth_forms
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.validators import ASCIIUsernameValidator
from django.core.exceptions import ValidationError

from memapp.lifecycle.models import Proposal, ProposalChange
from memapp.lifecycle.store_proposals import INDEX_KEY, proposed_index
from memapp.memdir.frontmatter import MEMORY_TYPES, Memory
from memapp.memdir.index import MAX_ENTRY_CHARS
from memapp.stores.events import EVENT_FIELDS
from memapp.stores.flags import FLAGS, FlagError, FlagSpec
from memapp.stores.models import FlagValue, Project, Store
from memapp.stores.projects import canonical_ref, find_project, valid_new_project_key
from memapp.web.event_story import kind_label
from snapshots.actions import ALLOWED
from snapshots.models import Checkout, SnapshotDecision
from snapshots.targets import Target

# --- Memories: a memory's fields, and the filters of a store's memory list.

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


# --- Proposals: which changes to approve, each possibly edited first.

PROPOSAL_FIELDS = ("name", "description", "type", "scope", "body")
PROPOSAL_SCOPES = [
    (Store.Kind.PRIVATE, "private (only you)"),
    (Store.Kind.TEAM, "team (every member of the project)"),
]


class ProposalDecisionForm(forms.Form):
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
                    choices=PROPOSAL_SCOPES, required=False, initial=change.scope or store.kind
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
            for name in PROPOSAL_FIELDS:
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
            for name in PROPOSAL_FIELDS
            if f"{name}-{change.pk}" in self.fields
        }


# --- Store-wide proposals (consolidation, distillation): the tick boxes and edits, the index
# edited as a whole, and the explicit tick a risky proposal needs (docs/design.md §14.7).


class StoreDecisionForm(ProposalDecisionForm):
    """`ProposalDecisionForm` whose index change is edited as one text, plus `confirm`: "apply it
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


# --- Agent memory snapshots: a checkout, and the decision on an update.


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


class SnapshotDecisionForm(forms.Form):
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


# --- Joining memhub: a new project, an invitation, accepting one, a device's code.


class ProjectForm(forms.Form):
    key = forms.CharField(
        label="Repository or name",
        max_length=255,
        help_text="owner/repo as in its git remote (e.g. acme/widgets), or a name of letters, "
        "digits and dashes.",
    )

    def clean_key(self) -> str:
        key = canonical_ref(self.cleaned_data["key"].strip())
        if not valid_new_project_key(key):
            raise forms.ValidationError(
                "Use owner/repo in plain letters, digits, dots, dashes and underscores (e.g. "
                "acme/widgets), or letters, digits and dashes only."
            )
        # By any of its names (`ACME/Widgets`, an old slug): never a second project of one repo.
        existing = find_project(key)
        if existing is not None:
            raise forms.ValidationError(f"The project {existing} exists already.")
        return key


class InvitationForm(forms.Form):
    email = forms.EmailField(
        required=False,
        label="Email (optional)",
        help_text="We mail the link there. Leave empty to copy the link yourself.",
    )
    projects = forms.ModelMultipleChoiceField(
        queryset=Project.objects.order_by("key"),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Projects they join",
    )


class AcceptForm(forms.Form):
    username = forms.CharField(label="Username", max_length=150)
    name = forms.CharField(label="Your name", max_length=200, required=False)
    password1 = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label="Password again", widget=forms.PasswordInput, strip=False)

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        model = get_user_model()
        # Letters of other alphabets are refused: "аdmin" with a Cyrillic а, or "ADMİN", would
        # sign history and events as a name no one can tell from another's.
        ASCIIUsernameValidator()(username)
        if model.objects.filter(username__iexact=username).exists():
            raise forms.ValidationError("That username is taken: choose another.")
        return username

    def clean(self):
        data = super().clean()
        first, second = data.get("password1"), data.get("password2")
        if first and second and first != second:
            self.add_error("password2", "The two passwords differ.")
        elif first:
            user = get_user_model()(username=data.get("username", ""))
            try:
                password_validation.validate_password(first, user)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class DeviceCodeForm(forms.Form):
    code = forms.CharField(label="Code shown by memhub-agent", max_length=20)


# --- The admin pages: a flag's value (settings page and Django admin), event filters.

NOTE_HELP = "Why: shown in the history next to the change."


def show_value(spec: FlagSpec, value: Any) -> str:
    """A flag value as a person reads it: on/off for switches, the number or text otherwise."""
    if spec.kind is bool:
        return "on" if value else "off"
    return str(value)


def _value_field(spec: FlagSpec) -> forms.Field:
    if spec.kind is bool:
        return forms.ChoiceField(choices=[("true", "on"), ("false", "off")])
    if spec.choices:
        return forms.ChoiceField(choices=[(c, c) for c in spec.choices])
    if spec.kind is int:
        attrs = {"min": spec.minimum} if spec.minimum is not None else {}
        return forms.CharField(widget=forms.NumberInput(attrs=attrs))
    return forms.CharField(max_length=200)


def _clean_value(spec: FlagSpec, value: Any) -> Any:
    try:
        return spec.clean(value)
    except FlagError as exc:
        raise ValidationError(str(exc)) from None


def _initial(spec: FlagSpec, value: Any) -> str:
    if spec.kind is bool:
        return "true" if value else "false"
    return str(value)


class FlagForm(forms.Form):
    """Set one flag globally or for one project, with a note for the history."""

    scope = forms.ChoiceField(label="Where", required=False)
    value = forms.CharField()
    note = forms.CharField(max_length=500, required=False, help_text=NOTE_HELP)

    def __init__(self, spec: FlagSpec, projects, *args, current: Any = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.spec = spec
        self.projects = {str(project.pk): project for project in projects}
        choices = [("", "global (every project without an override)")]
        if not spec.global_only:
            choices += [(pk, str(project)) for pk, project in self.projects.items()]
        self.fields["scope"].choices = choices
        self.fields["value"] = _value_field(spec)
        if current is not None:
            self.fields["value"].initial = _initial(spec, current)

    def clean_scope(self) -> Project | None:
        scope = self.cleaned_data["scope"]
        return self.projects[scope] if scope else None

    def clean_value(self) -> Any:
        return _clean_value(self.spec, self.cleaned_data["value"])


class FlagValueAdminForm(forms.ModelForm):
    """The Django admin's form: the same validation, and a note for the audit trail."""

    name = forms.ChoiceField(choices=[(name, name) for name in FLAGS])
    value = forms.CharField(help_text="on/off, a number or text, as the flag takes.")
    note = forms.CharField(max_length=500, required=False, help_text=NOTE_HELP)

    class Meta:
        model = FlagValue
        fields = ["name", "project", "value"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        spec = FLAGS.get(self.instance.name) if self.instance.pk else None
        if spec is not None:
            self.initial["value"] = _initial(spec, self.instance.value)

    def clean(self) -> dict:
        data = super().clean()
        name = data.get("name", self.instance.name)
        project = data.get("project", self.instance.project if self.instance.pk else None)
        spec = FLAGS.get(name)
        if spec is None or "value" not in data:
            return data
        if project is not None and spec.global_only:
            self.add_error("project", f"{name} is global only; it cannot be set per project.")
        try:
            data["value"] = spec.clean(data["value"])
        except FlagError as exc:
            self.add_error("value", str(exc))
        return data


class EventFilterForm(forms.Form):
    """The events page's filters; every field optional."""

    kind = forms.ChoiceField(required=False)
    project = forms.ChoiceField(required=False)
    user = forms.ChoiceField(required=False)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, projects=(), users=(), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [("", "any kind")] + [
            (k, kind_label(k)) for k in EVENT_FIELDS
        ]
        self.fields["project"].choices = [("", "any project")] + [
            (str(p.pk), str(p)) for p in projects
        ]
        self.fields["user"].choices = [("", "anyone")] + [
            (str(u.pk), u.get_username()) for u in users
        ]

    def clean(self) -> dict:
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise ValidationError("The start date is after the end date.")
        return data


def event_filter_users(events):
    """The people who appear in `events` (for the user filter), by name."""
    return get_user_model().objects.filter(pk__in=events.values("user")).order_by("username")
