"""Fuzzing every operation of the OpenAPI schema at `/api/schema/` with schemathesis: no 5xx,
also with the keys of each case put under a file (test_schema_limits.py sends JSON nested 1,000
deep to every operation that takes a body).

Requests go through the WSGI app in-process (same database as the test), with a valid token.
Store ids (in paths and bodies) are pointed at the caller's own store, so file operations run
against a real directory with fuzzed keys and bodies rather than only 404ing. The number of
examples is kept small so the whole module stays well under a minute, and derandomized so the
suite gives the same answer on every run: to explore further, raise `max_examples` and drop
`derandomize` by hand (600 random examples per operation found nothing more on 2026-11-25).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token
from memapp.wsgi import application
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)

OPERATIONS = {
    ("GET", "/api/v1/stores/"),
    ("POST", "/api/v1/stores/resolve"),
    ("GET", "/api/v1/stores/{store_id}/files/"),
    ("POST", "/api/v1/stores/{store_id}/batch"),
    ("GET", "/api/v1/stores/{store_id}/files/{key}"),
    ("PUT", "/api/v1/stores/{store_id}/files/{key}"),
    ("DELETE", "/api/v1/stores/{store_id}/files/{key}"),
    ("POST", "/api/v1/remember"),
    ("POST", "/api/v1/forget"),
    ("GET", "/api/v1/prompt"),
    ("POST", "/api/v1/prompt"),
    ("POST", "/api/v1/recall"),
}


def test_the_schema_describes_every_agent_operation_and_not_the_catch_all():
    found = {(op.ok().method.upper(), op.ok().path) for op in schema.get_all_operations()}
    assert found >= OPERATIONS
    assert all(p.startswith(("/api/v1/", "/api/claude_code/")) for _, p in found)
    assert not any("{rest}" in p for _, p in found)


@pytest.fixture
def auth(alice, settings, in_process_requests):
    settings.ANTHROPIC_API_KEY = ""  # never reach out to a model from a fuzz test
    store = resolve_store(alice, "acme/app", "private")
    write_memory(Path(store.path), "feedback_db.md", "Real DB", "Tests hit a real DB", "feedback")
    Path(store.path, "MEMORY.md").write_text("- [Real DB](feedback_db.md) — no mocks\n")
    _, token = do_create_api_token(alice, "fuzz")
    return store, {"Authorization": f"Bearer {token}"}


@schema.parametrize()
@hypothesis_settings(
    max_examples=12,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_operation_answers_with_a_server_error(case, auth):
    store, headers = auth
    if str((case.path_parameters or {}).get("store_id")).isdigit():
        case.path_parameters["store_id"] = store.pk
    for fields in (case.body, case.query):
        if isinstance(fields, dict) and isinstance(fields.get("store"), int):
            fields["store"] = store.pk
    response = case.call(headers=headers)
    assert response.status_code < 500, (case.as_curl_command(headers), response.text[:500])
    # The same request with its keys under a file the store has (`feedback_db.md/…`).
    params = case.path_parameters or {}
    if isinstance(params.get("key"), str):
        params["key"] = f"feedback_db.md/{params['key']}"
    elif isinstance(case.body, dict) and isinstance(case.body.get("files"), dict):
        case.body["files"] = {f"feedback_db.md/{k}": v for k, v in case.body["files"].items()}
    else:
        return
    response = case.call(headers=headers)
    assert response.status_code < 500, (case.as_curl_command(headers), response.text[:500])


def test_a_base_for_a_key_outside_the_batch_is_refused(auth):
    # Found by the fuzz test above: it used to be a KeyError (500).
    store, headers = auth
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=headers["Authorization"])
    response = client.post(
        f"/api/v1/stores/{store.pk}/batch",
        {"files": {"a.md": "x"}, "base": {"a.md": None, "other.md": "sha256:00"}},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"] == {
        "base": {"other.md": ["Not uploaded or deleted in this batch."]}
    }
    assert not Path(store.path, "a.md").exists()


def test_projects_whose_keys_sanitize_alike_get_their_own_stores(alice_api):
    first = alice_api.post("/api/v1/recall", {"project": "acme/app", "query": "x"}, format="json")
    assert first.status_code == 200
    second = alice_api.post("/api/v1/recall", {"project": "acme-app", "query": "x"}, format="json")
    assert second.status_code == 200
