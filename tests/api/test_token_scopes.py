"""A token works within its scope and until it expires; renewing brings it back; its last use
says when and from which client."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from memapp.stores.models import ApiToken, Project
from memapp.stores.tokens import do_create_api_token, do_renew_api_token

pytestmark = pytest.mark.django_db

MEMORY = {
    "project": "acme/app",
    "name": "Real DB",
    "description": "Tests hit a real database",
    "type": "feedback",
    "body": "Use it.\n\n**Why:** x\n**How to apply:** y\n",
}


def _client(user, scope: str) -> tuple[APIClient, ApiToken]:
    row, token = do_create_api_token(user, scope, scope)
    client = APIClient(HTTP_USER_AGENT="memhub-agent/0.1 test")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client, row


def _remember(client, **extra):
    return client.post("/api/v1/remember", {**MEMORY, **extra}, format="json")


def test_a_read_token_reads_and_recalls_but_writes_nothing(alice):
    client, _ = _client(alice, "read")
    assert client.get("/api/v1/stores/").status_code == 200
    assert client.post("/api/v1/recall", {"query": "db"}, format="json").status_code != 403

    response = _remember(client)
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["code"] == "forbidden"
    assert "'read' scope" in error["message"] and "'write (own memory)'" in error["message"]
    assert not Project.objects.filter(key="acme/app").exists()


FRESH = {"project": "acme/fresh", "scope": "private"}


def test_a_read_token_looks_a_new_project_up_without_creating_it(sam):
    reader, _ = _client(sam, "read")
    response = reader.post("/api/v1/stores/resolve", FRESH, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_project"
    assert not Project.objects.filter(key="acme/fresh").exists()

    writer, _ = _client(sam, "write")
    response = writer.post("/api/v1/stores/resolve", FRESH, format="json")
    assert response.status_code == 200
    assert Project.objects.get(key="acme/fresh").members.get() == sam


def test_a_write_token_writes_its_own_memory_but_not_the_teams(alice):
    client, _ = _client(alice, "write")
    assert _remember(client).status_code == 201

    response = _remember(client, scope="team", name="Team rule")
    assert response.status_code == 403
    assert "'team write'" in response.json()["error"]["message"]
    team_store = Project.objects.get(key="acme/app").stores.filter(kind="team")
    assert not team_store.exists() or not team_store.get().files.exists()


def test_a_read_token_makes_no_team_store(alice, bob):
    _remember(_client(alice, "write")[0])  # acme/app, with no team store yet
    Project.objects.get(key="acme/app").members.add(bob)
    reader, _ = _client(bob, "read")
    body = {"project": "acme/app", "scope": "team"}
    response = reader.post("/api/v1/stores/resolve", body, format="json")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "no_store"
    assert not Project.objects.get(key="acme/app").stores.filter(kind="team").exists()


def _team_memory(user) -> None:
    client, _ = _client(user, "team_write")
    assert _remember(client).status_code == 201  # the project and its stores exist from here
    assert _remember(client, scope="team", name="Release freeze").status_code == 201


@pytest.mark.parametrize("spelled", [float, lambda pk: f"{pk}.0", lambda pk: f" {pk}"])
def test_a_write_token_reaches_no_team_store_however_its_id_is_spelled(alice, spelled):
    _team_memory(alice)
    team = Project.objects.get(key="acme/app").stores.get(kind="team")
    client, _ = _client(alice, "write")
    before = sorted(p.name for p in Path(team.path).iterdir())
    remembered = _remember(client, store=spelled(team.pk), name="Sneaked in")
    forgot = client.post(
        "/api/v1/forget",
        {"store": spelled(team.pk), "path": "project_release_freeze.md"},
        format="json",
    )
    for refused in (remembered, forgot):
        assert refused.status_code == 403
        assert "'team write'" in refused.json()["error"]["message"]
    assert sorted(p.name for p in Path(team.path).iterdir()) == before


def test_the_scope_a_write_needs_tells_an_outsider_nothing_of_a_team_store(alice, charlie):
    _team_memory(alice)
    team = Project.objects.get(key="acme/app").stores.get(kind="team")
    client, _ = _client(charlie, "write")
    for store in (team.pk, 99_999):
        assert _remember(client, store=store).status_code == 404
        batch = client.post(f"/api/v1/stores/{store}/batch", {"delete": []}, format="json")
        assert batch.status_code == 404


def test_a_team_write_token_writes_the_teams_memory(alice):
    client, _ = _client(alice, "team_write")
    assert _remember(client).status_code == 201  # the project and its stores exist from here
    assert _remember(client, scope="team", name="Team rule").status_code == 201


def test_an_expired_token_gets_a_401_that_says_so_and_renewing_brings_it_back(alice):
    client, row = _client(alice, "admin")
    row.expires_at = timezone.now() - timedelta(seconds=1)
    row.save(update_fields=["expires_at"])

    response = client.get("/api/v1/stores/")
    assert response.status_code == 401
    assert "expired" in response.json()["error"]["message"]

    do_renew_api_token(row)
    assert row.expires_at > timezone.now() + timedelta(days=89)
    assert client.get("/api/v1/stores/").status_code == 200


def test_new_tokens_expire_in_90_days_and_remember_their_last_client(alice):
    client, row = _client(alice, "read")
    assert timedelta(days=89) < row.expires_at - timezone.now() <= timedelta(days=90)
    client.get("/api/v1/stores/")
    row.refresh_from_db()
    assert row.last_used_at is not None
    assert row.last_user_agent == "memhub-agent/0.1 test"


def test_the_tokens_page_creates_a_scoped_token_renews_and_lists_devices(client, alice):
    client.force_login(alice)
    page = client.post("/profile/tokens/", {"name": "ci", "scope": "read"}).content.decode()
    assert "memhub-agent login http://testserver --token -</pre>" in page
    row = ApiToken.objects.get()
    assert row.scope == "read"
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(days=1))
    assert "expired" in client.get("/profile/tokens/").content.decode()

    client.post(f"/profile/tokens/{row.pk}/renew/")
    row.refresh_from_db()
    assert not row.expired
    assert client.post("/profile/tokens/", {"name": "x", "scope": "root"}).status_code == 302
    assert ApiToken.objects.count() == 1


def test_nobody_renews_another_users_token(client, alice, bob):
    row, _ = do_create_api_token(alice, "laptop")
    client.force_login(bob)
    assert client.post(f"/profile/tokens/{row.pk}/renew/").status_code == 404
