"""Login throttling (docs/design.md §25): on by default, per username and per address, a wait the
login page names, and staff who can unlock. tests/test_serve.py shows it across two server
workers."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

WAIT = "Too many failed logins for this username or from this address: wait 15 minutes"


def log_in(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(
        reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=address
    )


def fail(client, times: int, username: str = "alice", address: str = "10.0.0.1") -> None:
    """`times` failed logins below the limit: each says the password did not match."""
    for _ in range(times):
        response = log_in(client, username, "wrong password", address)
        assert response.status_code == 200
        assert b"didn't match" in response.content


def lock(client, username: str = "alice", address: str = "10.0.0.1") -> None:
    """Four failures, then the fifth: its answer is already the wait."""
    fail(client, 4, username, address)
    response = log_in(client, username, "wrong password", address)
    assert response.status_code == 429
    assert WAIT in response.content.decode()


def test_it_is_on_by_default_with_a_few_tries():
    assert settings.AXES_ENABLED is not False
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_HANDLER == "axes.handlers.database.AxesDatabaseHandler"


def test_after_five_failures_even_the_right_password_waits(client, alice):
    lock(client)
    response = log_in(client, "alice", PASSWORD)
    assert response.status_code == 429
    assert WAIT in response.content.decode()
    assert "ask a staff member to unlock it" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get(reverse("home")).status_code == 302  # still logged out


def test_four_failures_then_the_right_password_logs_in_and_starts_the_count_again(client, alice):
    fail(client, 4)
    assert log_in(client, "alice", PASSWORD).status_code == 302
    client.logout()
    fail(client, 4)
    assert log_in(client, "alice", PASSWORD).status_code == 302


def test_a_username_is_locked_from_every_address(client, alice):
    for n in range(4):
        fail(client, 1, address=f"10.0.1.{n}")
    assert log_in(client, "alice", "wrong", address="10.0.1.9").status_code == 429
    assert log_in(client, "alice", PASSWORD, address="10.0.2.1").status_code == 429


def test_an_address_trying_many_usernames_is_locked_for_all_of_them(client, alice):
    for n in range(4):
        fail(client, 1, username=f"guess{n}")
    assert log_in(client, "guess9", "wrong").status_code == 429
    assert log_in(client, "alice", PASSWORD).status_code == 429
    assert log_in(client, "alice", PASSWORD, address="10.0.0.2").status_code == 302


def test_behind_a_trusted_proxy_the_forwarded_address_counts(client, alice, settings):
    settings.MEMHUB_TRUST_PROXY = True
    for n in range(5):
        client.post(
            reverse("login"),
            {"username": f"guess{n}", "password": "x"},
            REMOTE_ADDR="127.0.0.1",
            HTTP_X_FORWARDED_FOR=f"1.2.3.{n}, 10.9.9.9",
        )
    # Counted for the address the proxy added, not for the proxy's own.
    locked = client.post(
        reverse("login"),
        {"username": "alice", "password": PASSWORD},
        REMOTE_ADDR="127.0.0.1",
        HTTP_X_FORWARDED_FOR="5.5.5.5, 10.9.9.9",
    )
    assert locked.status_code == 429
    assert log_in(client, "alice", PASSWORD, address="127.0.0.1").status_code == 302


def test_staff_unlock_with_axes_reset(client, alice):
    lock(client)
    assert log_in(client, "alice", PASSWORD).status_code == 429
    call_command("axes_reset", verbosity=0)
    assert log_in(client, "alice", PASSWORD).status_code == 302


def test_staff_unlock_from_the_admin(client, alice, sam):
    lock(client, username="bob")
    attempt = AccessAttempt.objects.get(username="bob")
    admin = type(client)()
    admin.force_login(alice)
    listed = admin.get(reverse("admin:axes_accessattempt_changelist"))
    assert listed.status_code == 200
    assert b"bob" in listed.content
    deleted = admin.post(
        reverse("admin:axes_accessattempt_delete", args=[attempt.pk]), {"post": "yes"}
    )
    assert deleted.status_code == 302
    assert not AccessAttempt.objects.exists()
