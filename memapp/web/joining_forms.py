"""Forms of joining memhub: a new project, an invitation, accepting one, a device's code."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model, password_validation

from memapp.stores.models import Project
from memapp.stores.projects import valid_project_key


class ProjectForm(forms.Form):
    key = forms.CharField(
        label="Repository or name",
        max_length=255,
        help_text="owner/repo as in its git remote (e.g. acme/widgets), or a name of letters, "
        "digits and dashes.",
    )

    def clean_key(self) -> str:
        key = self.cleaned_data["key"].strip()
        if not valid_project_key(key):
            raise forms.ValidationError(
                "Use owner/repo (e.g. acme/widgets) or letters, digits and dashes only."
            )
        if Project.objects.filter(key=key).exists():
            raise forms.ValidationError(f"The project {key} exists already.")
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
        model.username_validator(username)
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
