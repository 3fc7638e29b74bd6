"""A slug the shared team repository already holds but memhub does not know is claimed only by
staff, whatever `protocol_project_creation` says (docs/design.md §1): creating it would hand
its team memory to whoever asked first."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memapp.stores.flags import set_flag
from memapp.stores.models import Project
from memapp.stores.tokens import do_create_api_token
from teamsync.service import do_sync_team
from tests.teamsync.gitutil import Member, memory

pytestmark = pytest.mark.django_db


def _api(client, user):
    _, token = do_create_api_token(user, "agent")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def elsewhere(remote, tmp_path, alice):
    """Another memhub's team wrote acme/other; this memhub's clone has seen it."""
    eve = Member(tmp_path / "elsewhere", "eve", remote, folder="acme/other")
    eve.write("reference_keys.md", memory("Keys", "Where the deploy keys live.\n"))
    eve.sync()
    set_flag("protocol_project_creation", "everyone", user=alice)
    do_sync_team()


def test_a_slug_the_shared_repository_holds_is_claimed_only_by_staff(elsewhere, bob, alice):
    bob_api = _api(APIClient(), bob)
    url = "/api/claude_code/team_memory?repo=acme%2Fother"
    assert bob_api.get(url).json()["error"]["code"] == "no_project"
    put = bob_api.put(url, {"entries": {"a.md": "mine now\n"}}, format="json")
    assert put.status_code == 404
    resolve = {"project": "acme/other", "scope": "private"}
    assert bob_api.post("/api/v1/stores/resolve", resolve, format="json").status_code == 404
    assert not Project.objects.exists()
    fresh = "/api/claude_code/team_memory?repo=acme%2Fnew"
    assert bob_api.put(fresh, {"entries": {"a.md": "new\n"}}, format="json").status_code == 200
    alice_api = _api(APIClient(), alice)
    assert alice_api.post("/api/v1/stores/resolve", resolve, format="json").status_code == 200
    assert set(Project.objects.values_list("key", flat=True)) == {"acme/new", "acme/other"}
