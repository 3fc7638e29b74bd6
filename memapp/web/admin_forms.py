"""Forms of the admin pages: a flag's value (settings page and Django admin), event filters.

A flag's value is always validated by its own `FlagSpec.clean`, so the settings page, the
Django admin and `set_flag` accept and refuse exactly the same values with the same words.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from memapp.stores.events import EVENT_FIELDS
from memapp.stores.flags import FLAGS, FlagError, FlagSpec
from memapp.stores.models import FlagValue, Project
from memapp.web.event_story import kind_label

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
