"""The device authorization grant of `memhub-agent login` (RFC 8628): a code is approved once
by a signed-in person, denied codes and expired ones issue nothing, fast polling slows down."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from memapp.stores.models import ApiToken, DeviceAuthorization
from memapp.stores.tokens import authenticate_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def device() -> APIClient:
    return APIClient(HTTP_USER_AGENT="memhub-agent/0.1")


def _start(device) -> dict:
    response = device.post("/api/v1/device/code", {"client_name": "dana-laptop"}, format="json")
    assert response.status_code == 200
    return response.json()


def _poll(device, start: dict, *, wait: bool = True):
    if wait:  # as if the interval had passed since the last poll
        DeviceAuthorization.objects.update(last_polled_at=timezone.now() - timedelta(minutes=1))
    return device.post("/api/v1/device/token", {"device_code": start["device_code"]}, format="json")


def _code(response) -> str:
    return response.json()["error"]["code"]


def test_an_approved_device_gets_one_token_of_the_approving_person(client, device, bob):
    start = _start(device)
    assert start["verification_uri"] == "http://testserver/device/"
    assert start["verification_uri_complete"].endswith(f"?code={start['user_code']}")
    assert _code(_poll(device, start, wait=False)) == "authorization_pending"

    client.force_login(bob)
    page = client.get(start["verification_uri_complete"]).content.decode()
    assert "dana-laptop" in page and "memhub-agent/0.1" in page
    response = client.post("/device/", {"code": start["user_code"], "decision": "approve"})
    assert response.status_code == 302

    answer = _poll(device, start).json()
    assert answer["token_type"] == "Bearer"
    assert authenticate_token(answer["access_token"]).user == bob
    assert ApiToken.objects.get().name == "dana-laptop"
    assert _code(_poll(device, start)) == "invalid_grant"  # issued once
    assert ApiToken.objects.count() == 1


def test_a_code_approved_twice_is_refused_the_second_time(client, device, bob, charlie):
    start = _start(device)
    client.force_login(bob)
    client.post("/device/", {"code": start["user_code"], "decision": "approve"})
    client.force_login(charlie)
    response = client.post("/device/", {"code": start["user_code"], "decision": "approve"})
    assert response.status_code == 400
    assert "already approved" in response.content.decode()
    assert authenticate_token(_poll(device, start).json()["access_token"]).user == bob


def test_a_denied_code_issues_no_token(client, device, bob):
    start = _start(device)
    client.force_login(bob)
    client.post("/device/", {"code": start["user_code"].lower(), "decision": "deny"})
    response = _poll(device, start)
    assert response.status_code == 400
    assert _code(response) == "access_denied"
    assert not ApiToken.objects.exists()


def test_a_code_approved_by_an_account_deactivated_since_issues_no_token(client, device, bob):
    start = _start(device)
    client.force_login(bob)
    client.post("/device/", {"code": start["user_code"], "decision": "approve"})
    bob.is_active = False
    bob.save()
    response = _poll(device, start)
    assert response.status_code == 400
    assert _code(response) == "access_denied"
    assert "deactivated" in response.json()["error"]["message"]
    assert not ApiToken.objects.exists()


def test_polling_too_fast_slows_the_device_down(device):
    start = _start(device)
    assert _code(_poll(device, start, wait=False)) == "authorization_pending"
    response = _poll(device, start, wait=False)
    assert _code(response) == "slow_down"
    assert response.json()["error"]["details"]["interval"] == start["interval"] + 5


def test_an_expired_code_can_be_neither_approved_nor_used(client, device, bob):
    start = _start(device)
    DeviceAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    client.force_login(bob)
    response = client.post("/device/", {"code": start["user_code"], "decision": "approve"})
    assert response.status_code == 400
    assert "expired" in response.content.decode()
    assert _code(_poll(device, start)) == "expired_token"
    assert not ApiToken.objects.exists()


def test_approving_needs_a_signed_in_person_and_a_known_code(client, device, bob):
    start = _start(device)
    response = client.post("/device/", {"code": start["user_code"], "decision": "approve"})
    assert response.status_code == 302 and "/login/" in response["Location"]
    client.force_login(bob)
    response = client.post("/device/", {"code": "BBBB-BBBB", "decision": "approve"})
    assert response.status_code == 400
    assert DeviceAuthorization.objects.get().status == "pending"
    assert _code(_poll(device, {"device_code": "nope"})) == "invalid_grant"
