"""Flags in the Django admin: validated like everywhere else, and every change audited."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memapp.stores.flags import get_flag, set_flag
from memapp.stores.models import Event, FlagValue
from tests.admin_ui.conftest import client_for, text

pytestmark = pytest.mark.django_db

ADD = reverse("admin:memapp_flagvalue_add")
LIST = reverse("admin:memapp_flagvalue_changelist")


def change_url(row: FlagValue) -> str:
    return reverse("admin:memapp_flagvalue_change", args=[row.pk])


def test_adding_a_value_in_the_admin_goes_through_set_flag(alice, acme):
    response = client_for(alice).post(
        ADD,
        {"name": "recall_max", "project": acme.project.pk, "value": "2", "note": "from admin"},
    )
    assert response.status_code == 302, text(response)
    assert get_flag("recall_max", acme.project) == 2
    row = FlagValue.objects.get()
    assert row.value == 2 and row.updated_by == alice
    event = Event.objects.get(kind="flag_changed")
    assert event.user == alice
    assert event.fields == {
        "name": "recall_max",
        "scope": "acme/app",
        "old": 5,
        "new": 2,
        "note": "from admin",
    }


def test_changing_a_value_in_the_admin_is_audited_with_old_and_new(alice):
    set_flag("recall", False)
    row = FlagValue.objects.get()
    response = client_for(alice).post(change_url(row), {"value": "on", "note": "back on"})
    assert response.status_code == 302, text(response)
    assert get_flag("recall") is True
    event = Event.objects.filter(kind="flag_changed").first()
    assert (event.fields["old"], event.fields["new"], event.fields["note"]) == (
        False,
        True,
        "back on",
    )
    assert event.user == alice


def test_the_admin_shows_a_switch_as_true_or_false(alice):
    set_flag("recall", False)
    page = client_for(alice).get(change_url(FlagValue.objects.get())).content.decode()
    assert 'value="false"' in page


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("recall_max", "0", "recall_max must be at least 1, not 0"),
        ("index_max_lines", "many", "index_max_lines must be an integer, not &#x27;many&#x27;"),
        ("recall_model", " ", "This field is required."),
        ("protocol_project_creation", "anyone", "must be one of staff, everyone"),
    ],
)
def test_the_admin_refuses_bad_values(alice, name, value, message):
    response = client_for(alice).post(ADD, {"name": name, "value": value})
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not FlagValue.objects.exists() and not Event.objects.exists()


def test_the_admin_refuses_a_project_value_for_a_global_only_flag(alice, acme):
    response = client_for(alice).post(
        ADD, {"name": "secrets_entropy_plugins", "project": acme.project.pk, "value": "true"}
    )
    assert response.status_code == 200
    assert "secrets_entropy_plugins is global only" in response.content.decode()
    assert not FlagValue.objects.exists()


def test_deleting_in_the_admin_is_audited(alice, acme):
    set_flag("recall_max", 2, project=acme.project)
    row = FlagValue.objects.get()
    delete = reverse("admin:memapp_flagvalue_delete", args=[row.pk])
    response = client_for(alice).post(delete, {"post": "yes"})
    assert response.status_code == 302
    assert not FlagValue.objects.exists()
    event = Event.objects.filter(kind="flag_changed").first()
    assert (event.fields["old"], event.fields["new"], event.user) == (2, 5, alice)


def test_bulk_deleting_in_the_admin_is_audited_per_value(alice, acme):
    set_flag("recall_max", 2, project=acme.project)
    set_flag("auto_memory", False)
    rows = list(FlagValue.objects.values_list("pk", flat=True))
    response = client_for(alice).post(
        LIST, {"action": "delete_selected", "_selected_action": rows, "post": "yes"}
    )
    assert response.status_code == 302
    assert not FlagValue.objects.exists()
    changes = Event.objects.filter(kind="flag_changed", user=alice)
    assert sorted(e.fields["name"] for e in changes) == ["auto_memory", "recall_max"]


def test_people_without_staff_status_cannot_use_the_admin(bob):
    response = client_for(bob).post(ADD, {"name": "recall", "value": "false"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert get_flag("recall") is True
