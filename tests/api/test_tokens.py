from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from memapp.stores.models import ApiToken
from memapp.stores.tokens import (
    authenticate_token,
    do_create_api_token,
    do_revoke_api_token,
    hash_token,
)
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def test_tokens_are_stored_hashed_and_shown_once(alice):
    row, token = do_create_api_token(alice, "laptop")
    assert token.startswith("mh_") and len(token) > 40
    assert row.token_hash == hash_token(token) and token not in row.token_hash
    assert row.prefix == token[:10]
    assert authenticate_token(token).user == alice


def test_revoked_tokens_stop_working(alice):
    row, token = do_create_api_token(alice, "laptop")
    do_revoke_api_token(row)
    assert authenticate_token(token) is None
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    response = client.get("/api/v1/stores/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthorized"


def test_last_use_is_written_at_most_once_a_minute(alice, django_assert_num_queries):
    _, token = do_create_api_token(alice, "laptop")
    authenticate_token(token)
    first = ApiToken.objects.get().last_used_at
    with django_assert_num_queries(1):  # the lookup only, no update
        authenticate_token(token)
    assert ApiToken.objects.get().last_used_at == first


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer nope", "Token abc", "Bearer mh_x y"])
def test_missing_or_wrong_tokens_get_401_in_the_error_shape(header, client):
    kwargs = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/api/v1/stores/", **kwargs)
    assert response.status_code == 401
    assert set(response.json()["error"]) == {"code", "message", "details"}


def test_the_command_prints_the_token_alone_on_the_last_line(alice, capsys):
    call_command("create_api_token", "alice")
    token = capsys.readouterr().out.strip().splitlines()[-1]
    assert authenticate_token(token).user == alice


def test_the_profile_page_creates_shows_once_and_revokes(client, alice):
    client.login(username="alice", password=PASSWORD)
    page = client.post("/profile/tokens/", {"name": "ci"}).content.decode()
    token = page.split('id="new-token" data-copy="the new token">')[1].split("</pre>")[0]
    assert authenticate_token(token).user == alice
    assert token not in client.get("/profile/tokens/").content.decode()
    row = ApiToken.objects.get()
    client.post(f"/profile/tokens/{row.pk}/revoke/")
    assert authenticate_token(token) is None


def test_nobody_revokes_another_users_token(client, alice, bob):
    row, token = do_create_api_token(alice, "laptop")
    client.login(username="bob", password=PASSWORD)
    assert client.post(f"/profile/tokens/{row.pk}/revoke/").status_code == 404
    assert authenticate_token(token) is not None


def test_revoking_asks_first(client, alice):
    row, token = do_create_api_token(alice, "laptop")
    client.login(username="alice", password=PASSWORD)
    assert 'href="/profile/tokens/' in client.get("/profile/tokens/").content.decode()
    page = client.get(f"/profile/tokens/{row.pk}/revoke/").content.decode()
    assert "Revoke the token “laptop”?" in page
    assert "You can reinstate it within 24 hours" in page
    assert authenticate_token(token) is not None


def test_a_revoked_token_is_reinstated_within_a_day_and_not_after(client, alice):
    row, token = do_create_api_token(alice, "laptop")
    client.login(username="alice", password=PASSWORD)
    client.post(f"/profile/tokens/{row.pk}/revoke/")
    assert "Reinstate" in client.get("/profile/tokens/").content.decode()
    response = client.post(f"/profile/tokens/{row.pk}/reinstate/", follow=True)
    assert "Reinstated token &#x27;laptop&#x27;: it works again." in response.content.decode()
    assert authenticate_token(token).user == alice
    client.post(f"/profile/tokens/{row.pk}/revoke/")
    ApiToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now() - timedelta(hours=25))
    assert "Reinstate" not in client.get("/profile/tokens/").content.decode()
    response = client.post(f"/profile/tokens/{row.pk}/reinstate/", follow=True)
    assert (
        "revoked more than 24 hours ago: create a new token instead." in response.content.decode()
    )
    assert authenticate_token(token) is None


def test_nobody_reinstates_another_users_token(client, alice, bob):
    row, token = do_create_api_token(alice, "laptop")
    do_revoke_api_token(row)
    client.login(username="bob", password=PASSWORD)
    assert client.post(f"/profile/tokens/{row.pk}/reinstate/").status_code == 404
    assert authenticate_token(token) is None
