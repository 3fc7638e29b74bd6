"""Bad requests the fuzz test of test_schema.py does not generate, sent to every operation of
the schema that could take them: JSON nested 1,000 deep and keys whose folder is a file. Each
is a 4xx with the API's error shape, never a 500 (docs/design.md §15, §4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import schemathesis
from rest_framework.test import APIClient

from memapp.api.parsers import MAX_JSON_DEPTH, json_depth
from memapp.stores.models import Project
from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token
from memapp.wsgi import application
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
BODY_OPERATIONS = sorted(
    (op.ok().method.upper(), op.ok().path) for op in schema.get_all_operations() if op.ok().body
)
DEEP = "[" * 1000 + "]" * 1000
PATH_VALUES = {
    "store_id": "{store}",
    "key": "feedback_db.md",
    "project_key": "acme/app",
    "agent_type": "reviewer",
    "proposal_id": "1",
    "session_id": "s1",
    "day": "2026-11-26",
}

# Operations that look up what they act on before they read the body.
LOOKED_UP_FIRST = {"/api/v1/proposals/{proposal_id}/approve"}


@pytest.fixture
def client(alice, in_process_requests):
    store = resolve_store(alice, "acme/app", "private")
    write_memory(Path(store.path), "feedback_db.md", "Real DB", "Tests hit a real DB", "feedback")
    _, token = do_create_api_token(alice, "limits")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    api.store = store
    return api


def test_every_operation_with_a_body_is_covered():
    assert ("POST", "/api/v1/remember") in BODY_OPERATIONS
    assert ("POST", "/api/v1/sessions/{session_id}/entries") in BODY_OPERATIONS
    assert ("PUT", "/api/claude_code/team_memory") in BODY_OPERATIONS


@pytest.mark.parametrize(("method", "path"), BODY_OPERATIONS)
def test_json_nested_1000_deep_is_a_400_too_deep(client, method, path):
    url = path
    for name, value in PATH_VALUES.items():
        url = url.replace("{" + name + "}", value.replace("{store}", str(client.store.pk)))
    if "team_memory" in url:
        url += "?repo=acme%2Fapp"
    body = '{"entries": ' + DEEP + ', "content": ' + DEEP + "}"
    response = client.generic(method, url, body, content_type="application/json")
    if path in LOOKED_UP_FIRST:
        assert response.status_code == 404  # no such proposal: the body is never read
        return
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert error["code"] == "too_deep"
    assert error["details"] == {"max_depth": MAX_JSON_DEPTH}


def test_json_as_deep_as_allowed_still_parses(client):
    nested = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    body = '{"query": "x", "project": "acme/app", "recent_tools": ' + nested + "}"
    response = client.generic("POST", "/api/v1/recall", body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"  # the serializer's answer, not a depth


def test_brackets_inside_strings_are_not_depth():
    text = json.dumps({"content": "[" * 5000 + "{" * 5000})
    assert json_depth(text.encode()) == 1
    assert json_depth(json.dumps({"a": [{"b": ['\\"[']}]}).encode()) == 4


def _refused(response) -> bool:
    """400 `invalid_key` naming the rule, or 404: never a 500."""
    if response.status_code == 404:
        return True
    error = response.json()["error"]
    return response.status_code == 400 and error["code"] == "invalid_key"


def test_a_key_whose_folder_is_a_file_is_refused_on_every_file_operation(client):
    store = client.store
    base = f"/api/v1/stores/{store.pk}"
    key = "feedback_db.md/x.md"
    assert _refused(client.get(f"{base}/files/{key}"))
    put = client.put(f"{base}/files/{key}", {"content": "x\n"}, format="json")
    assert put.status_code == 400
    assert put.json()["error"]["details"]["rule"] == "parent-is-file"
    assert _refused(client.delete(f"{base}/files/{key}"))
    batch = client.post(f"{base}/batch", {"files": {key: "x\n"}}, format="json")
    assert batch.status_code == 400
    assert batch.json()["error"]["details"]["rule"] == "parent-is-file"
    same_batch = client.post(
        f"{base}/batch", {"files": {"n.md": "a\n", "n.md/x.md": "b\n"}}, format="json"
    )
    assert same_batch.status_code == 400
    assert same_batch.json()["error"]["details"]["rule"] == "parent-is-file"
    assert not Path(store.path, "n.md").exists()
    folder = client.put(f"{base}/files/sub.md", {"content": "x\n"}, format="json")
    assert folder.status_code == 201
    Path(store.path, "dir.md").mkdir()
    as_file = client.put(f"{base}/files/dir.md", {"content": "x\n"}, format="json")
    assert as_file.status_code == 400
    assert as_file.json()["error"]["details"]["rule"] == "key-is-folder"
    assert Path(store.path, "feedback_db.md").is_file()


def test_a_key_whose_folder_is_a_file_is_refused_by_the_team_protocol(alice, client):
    project = Project.objects.create(key="acme/team", repo_slug="acme/team")
    project.members.add(alice)
    url = "/api/claude_code/team_memory?repo=acme%2Fteam"
    first = client.put(url, {"entries": {"a.md": "x\n"}}, format="json")
    assert first.status_code == 200, first.content
    nested = client.put(url, {"entries": {"a.md/x.md": "y\n"}}, format="json")
    assert nested.status_code == 400, nested.content
    assert nested.json()["error"]["code"] == "invalid_key"


@pytest.mark.parametrize(
    ("text", "depth"),
    [(b"[]", 1), (b"[][][]", 1), (b"[[],[[]]]", 3), (b'{"a": [{}, {"b": {}}]}', 4), (b"1", 0)],
)
def test_depth_is_the_deepest_nesting(text, depth):
    assert json_depth(text) == depth
    assert json_depth(b"[" * 1000 + b"]" * 1000) == MAX_JSON_DEPTH + 1  # counted no further
