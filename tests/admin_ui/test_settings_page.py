"""The staff-only Settings page: every flag with its values, changing one, validation, history."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from memapp.stores.flags import FLAGS, get_flag, set_flag
from memapp.stores.models import Event, FlagValue
from tests.admin_ui.conftest import client_for, text

pytestmark = pytest.mark.django_db

SETTINGS = reverse("settings")


def flag_url(name: str) -> str:
    return reverse("flag", kwargs={"name": name})


def clear_url(name: str) -> str:
    return reverse("flag_clear", kwargs={"name": name})


def row(response, name: str) -> str:
    match = re.search(rf'<tr id="flag-{name}"[^>]*>(.*?)</tr>', response.content.decode(), re.S)
    assert match, f"no row for {name}"
    return " ".join(re.sub(r"<[^>]+>", " ", match.group(1)).split())


# -- who may ------------------------------------------------------------------------------------


def test_anonymous_visitors_are_sent_to_log_in(client):
    for url in (SETTINGS, flag_url("recall"), clear_url("recall")):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_people_without_staff_status_cannot_see_or_change_flags(bob, acme):
    bob_client = client_for(bob)
    assert bob_client.get(SETTINGS).status_code == 404
    assert bob_client.get(flag_url("recall")).status_code == 404
    response = bob_client.post(flag_url("recall"), {"scope": "", "value": "false", "note": "x"})
    assert response.status_code == 404
    set_flag("recall_max", 3, project=acme.project)
    response = bob_client.post(clear_url("recall_max"), {"project": acme.project.pk})
    assert response.status_code == 404
    assert get_flag("recall") is True and get_flag("recall_max", acme.project) == 3
    assert Event.objects.filter(kind="flag_changed").count() == 1  # only the test's own


def test_people_without_staff_status_get_no_settings_link(bob, sam):
    assert 'href="/settings/"' not in client_for(bob).get("/").content.decode()
    assert 'href="/settings/"' in client_for(sam).get("/").content.decode()


def test_staff_may_change_flags_without_being_superusers(sam):
    response = client_for(sam).post(flag_url("recall_max"), {"scope": "", "value": "4"})
    assert response.status_code == 302
    assert get_flag("recall_max") == 4


# -- the list -----------------------------------------------------------------------------------


def test_it_lists_every_flag_with_type_default_and_global_value(alice):
    set_flag("recall_max", 3)
    response = client_for(alice).get(SETTINGS)
    assert response.status_code == 200
    for name in FLAGS:
        assert f'id="flag-{name}"' in response.content.decode()
    recall_max = row(response, "recall_max")
    assert "number 5 3" in recall_max
    assert "on/off on on (default)" in row(response, "auto_memory")
    assert "choice staff staff (default)" in row(response, "protocol_project_creation")
    assert "text claude-sonnet-4-6" in row(response, "recall_model")


def test_it_marks_exactly_the_flags_not_in_effect_yet(alice):
    response = client_for(alice).get(SETTINGS)
    for name, spec in FLAGS.items():
        assert ("not in effect yet" in row(response, name)) is (not spec.in_effect), name
    dormant = {name for name, spec in FLAGS.items() if not spec.in_effect}
    assert dormant == {"frontmatter_max_lines"}
    assert "1 flag belongs to features memhub does not have yet" in text(response)


def test_it_shows_project_overrides_and_global_only_flags(alice, acme):
    set_flag("recall", False, project=acme.project)
    response = client_for(alice).get(SETTINGS)
    assert "acme/app off" in row(response, "recall")
    assert "global only" in row(response, "secrets_entropy_plugins")


# -- changing a value ---------------------------------------------------------------------------


def test_a_staff_member_sets_a_global_value_with_a_note(alice):
    admin = client_for(alice)
    response = admin.post(
        flag_url("recall_max"), {"scope": "", "value": "3", "note": "recalls were noisy"}
    )
    assert response.status_code == 302 and response["Location"] == flag_url("recall_max")
    assert get_flag("recall_max") == 3
    event = Event.objects.get(kind="flag_changed")
    assert event.user == alice and event.project is None
    assert event.fields == {
        "name": "recall_max",
        "scope": "global",
        "old": 5,
        "new": 3,
        "note": "recalls were noisy",
    }
    page = text(admin.get(flag_url("recall_max")))
    assert "recall_max is now 3 globally." in page
    assert "alice recall_max global 5 → 3 recalls were noisy" in page


def test_a_staff_member_overrides_a_flag_for_one_project(alice, acme):
    response = client_for(alice).post(
        flag_url("recall"), {"scope": str(acme.project.pk), "value": "false", "note": "too slow"}
    )
    assert response.status_code == 302
    assert get_flag("recall", acme.project) is False and get_flag("recall") is True
    history = text(client_for(alice).get(SETTINGS))
    assert "alice recall acme/app on → off too slow" in history


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("recall_max", "0", "recall_max must be at least 1, not 0"),
        ("index_max_lines", "-5", "index_max_lines must be at least 1, not -5"),
        ("index_max_bytes", "lots", "index_max_bytes must be an integer, not 'lots'"),
        ("team_max_entries", "2.5", "team_max_entries must be an integer, not '2.5'"),
        ("recall_model", "   ", "This field is required."),
        ("sync_interval_seconds", "1", "sync_interval_seconds must be at least 5, not 1"),
        (
            "scan_max_files",
            "99999999999999999999999",
            "scan_max_files must be at most 1,000,000,000, not 99999999999999999999999",
        ),
        (
            "consolidation_min_hours",
            "87601",
            "consolidation_min_hours must be at most 87,600, not 87601",
        ),
        (
            "sync_interval_seconds",
            "604801",
            "sync_interval_seconds must be at most 604,800, not 604801",
        ),
        ("recall", "maybe", "Select a valid choice. maybe is not one of the available choices."),
    ],
)
def test_bad_values_are_refused_with_the_reason_shown(alice, name, value, message):
    response = client_for(alice).post(flag_url(name), {"scope": "", "value": value})
    assert response.status_code == 400
    assert message in text(response)
    assert not FlagValue.objects.exists() and not Event.objects.exists()


def test_a_value_stored_before_its_bound_counts_as_unset(alice, acme):
    """A flag set out of range before the bound existed (a huge hours value broke the store
    page and the background clock) falls back to the global value, then the default."""
    from memapp.stores.flags import get_flag, get_flags

    FlagValue.objects.create(name="consolidation_min_hours", project=None, value=10**23)
    assert get_flag("consolidation_min_hours") == 24
    FlagValue.objects.filter(name="consolidation_min_hours").update(value=48)
    FlagValue.objects.create(name="consolidation_min_hours", project=acme.project, value=10**23)
    assert get_flag("consolidation_min_hours", acme.project) == 48
    assert get_flags(acme.project)["consolidation_min_hours"] == 48
    assert client_for(alice).get(SETTINGS).status_code == 200


def test_a_global_only_flag_offers_no_project_scope(alice, acme):
    url = flag_url("secrets_entropy_plugins")
    assert "acme/app" not in text(client_for(alice).get(url))
    response = client_for(alice).post(url, {"scope": str(acme.project.pk), "value": "true"})
    assert response.status_code == 400
    assert not FlagValue.objects.exists()


def test_an_unknown_flag_is_a_404(alice):
    assert client_for(alice).get(flag_url("no_such_flag")).status_code == 404


def test_removing_an_override_brings_back_the_global_value(alice, acme):
    set_flag("recall_max", 2, project=acme.project)
    response = client_for(alice).post(
        clear_url("recall_max"), {"project": acme.project.pk, "note": "back to normal"}
    )
    assert response.status_code == 302
    assert get_flag("recall_max", acme.project) == 5
    event = Event.objects.filter(kind="flag_changed").first()
    assert event.user == alice
    assert event.fields == {
        "name": "recall_max",
        "scope": "acme/app",
        "old": 2,
        "new": 5,
        "note": "back to normal",
    }


def test_resetting_the_global_value_brings_back_the_default(alice):
    set_flag("auto_memory", False)
    client_for(alice).post(clear_url("auto_memory"), {"note": "reset to default"})
    assert get_flag("auto_memory") is True
    assert not FlagValue.objects.exists()
    event = Event.objects.filter(kind="flag_changed").first()
    assert event.fields["scope"] == "global" and event.fields["new"] is True


def test_the_form_starts_from_the_current_global_value(alice):
    set_flag("recall_model", "claude-haiku-4-5")
    page = client_for(alice).get(flag_url("recall_model")).content.decode()
    assert 'value="claude-haiku-4-5"' in page
