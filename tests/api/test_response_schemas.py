"""The OpenAPI schema at `/api/schema/` says what each agent operation answers, and the real
answers have exactly those fields (an agent or a generated client may rely on them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token
from memapp.wsgi import application
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

AGENT_DIR = "/home/alice/.claude/projects/-home-alice-app/memory"
RECALL_FIELDS = {"memories", "rendered", "selector", "fallback_reason"}
MEMORY_FIELDS = {
    "path",
    "scope",
    "type",
    "name",
    "description",
    "mtime_ms",
    "age",
    "age_days",
    "header",
    "content",
    "truncated",
    "reason",
}
PROMPT_FIELDS = {"text", "mode", "sections", "indexes"}
INDEX_FIELDS = {"path", "line_count", "byte_count", "was_line_truncated", "was_byte_truncated"}


def openapi(client) -> dict:
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.oai.openapi+json")
    return response.json()


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def answer(schema: dict, path: str, method: str, status: str = "200") -> dict:
    content = schema["paths"][path][method]["responses"][status]["content"]
    return resolve(schema, content["application/json"]["schema"])


def properties(schema: dict, node: dict) -> set[str]:
    return set(resolve(schema, node)["properties"])


def test_the_schema_names_the_fields_of_recall_and_prompt_answers(client):
    schema = openapi(client)

    recall = answer(schema, "/api/v1/recall", "post")
    assert set(recall["properties"]) == RECALL_FIELDS
    assert properties(schema, recall["properties"]["memories"]["items"]) == MEMORY_FIELDS
    assert resolve(schema, recall["properties"]["selector"])["enum"] == [
        "offline",
        "llm",
        "disabled",
    ]
    for method in ("get", "post"):
        prompt = answer(schema, "/api/v1/prompt", method)
        assert set(prompt["properties"]) == PROMPT_FIELDS
        assert properties(schema, prompt["properties"]["indexes"]["items"]) == INDEX_FIELDS


def test_every_agent_operation_describes_the_body_of_its_answers(client):
    schema = openapi(client)
    undescribed = [
        (method, path, status)
        for path, operations in schema["paths"].items()
        if path.startswith("/api/v1/") and not path.startswith("/api/v1/projects/")
        for method, operation in operations.items()
        for status, response in operation["responses"].items()
        if status not in ("204", "304") and "$ref" not in str(response.get("content"))
    ]
    assert undescribed == []


@pytest.fixture
def memories(alice, settings):
    """alice's private and team store of acme/app, each with an index and a memory (one
    without a type, so a null field is answered too)."""
    settings.ANTHROPIC_API_KEY = ""
    private = Path(resolve_store(alice, "acme/app", "private").path)
    team = Path(resolve_store(alice, "acme/app", "team").path)
    write_memory(private, "feedback_db.md", "Real DB", "Tests hit a real database", "feedback")
    (private / "MEMORY.md").write_text("- [Real DB](feedback_db.md) — no mocks\n")
    (team / "database_notes.md").write_text(
        "---\nname: Test database\ndescription: The tests' staging database resets nightly\n"
        "---\nReset at 02:00.\n"
    )
    (team / "MEMORY.md").write_text("- [Database](database_notes.md) — staging resets\n")


def test_real_recall_and_prompt_answers_have_exactly_the_schemas_fields(
    client, alice_api, memories
):
    schema = openapi(client)
    recall_schema = answer(schema, "/api/v1/recall", "post")
    prompt_schema = answer(schema, "/api/v1/prompt", "post")
    body = {"project": "acme/app", "memory_dir": AGENT_DIR}

    recalled = alice_api.post(
        "/api/v1/recall", {**body, "query": "database tests"}, format="json"
    ).json()
    prompts = [
        alice_api.post("/api/v1/prompt", body, format="json").json(),
        alice_api.get("/api/v1/prompt", body).json(),
    ]

    assert set(recalled) == set(recall_schema["properties"])
    memory_fields = properties(schema, recall_schema["properties"]["memories"]["items"])
    assert {m["scope"]: set(m) for m in recalled["memories"]} == {
        "private": memory_fields,
        "team": memory_fields,
    }
    index_fields = properties(schema, prompt_schema["properties"]["indexes"]["items"])
    for prompt in prompts:
        assert set(prompt) == set(prompt_schema["properties"])
        assert [set(index) for index in prompt["indexes"]] == [index_fields, index_fields]


def test_every_answer_of_the_agent_api_conforms_to_its_schema(alice, memories, in_process_requests):
    """Each operation called for real (in-process, same database), its answer checked against
    the schema's status codes and response body by schemathesis."""
    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    _, token = do_create_api_token(alice, "schema")
    store = resolve_store(alice, "acme/app", "private").pk
    key = {"store_id": store, "key": "notes/new.md"}
    project = {"project": "acme/app", "memory_dir": AGENT_DIR}
    missing = {"project": "acme/other", "scope": "private"}
    memory = {"name": "CI", "description": "CI runs on push", "type": "reference"}
    calls = [
        ("/api/v1/stores/", "GET", {}),
        ("/api/v1/stores/resolve", "POST", {"body": {"project": "acme/app", "scope": "team"}}),
        ("/api/v1/stores/resolve", "POST", {"body": {**missing, "create": False}}),
        ("/api/v1/stores/{store_id}/files/{key}", "PUT", {"body": {"content": "# New\n"}}),
        ("/api/v1/stores/{store_id}/files/{key}", "PUT", {"body": {"content": "# New\n"}}),
        ("/api/v1/stores/{store_id}/files/{key}", "GET", {}),
        ("/api/v1/stores/{store_id}/files/", "GET", {}),
        ("/api/v1/stores/{store_id}/files/", "GET", {"query": {"view": "hashes"}}),
        ("/api/v1/stores/{store_id}/batch", "POST", {"body": {"files": {"b.md": "# B\n"}}}),
        ("/api/v1/stores/{store_id}/files/{key}", "DELETE", {}),
        ("/api/v1/remember", "POST", {"body": {"store": store, **memory}}),
        ("/api/v1/forget", "POST", {"body": {"store": store, "path": "b.md"}}),
        ("/api/v1/recall", "POST", {"body": {**project, "query": "database tests"}}),
        ("/api/v1/prompt", "POST", {"body": project}),
        ("/api/v1/prompt", "GET", {"query": project}),
        ("/api/v1/session-start", "POST", {"body": {**project, "have": {}}}),
        ("/api/v1/recall/surfaced", "POST", {"body": {"session_id": "s-1", "paths": ["a.md"]}}),
        ("/api/v1/me", "GET", {}),
        ("/api/v1/token", "DELETE", {}),  # last: it revokes the token
    ]
    statuses = []
    for path, method, parts in calls:
        case = schema[path][method].Case(path_parameters=key if "{" in path else None, **parts)
        response = case.call(headers={"Authorization": f"Bearer {token}"})
        case.validate_response(
            response, checks=[status_code_conformance, response_schema_conformance]
        )
        statuses.append(response.status_code)

    assert statuses == [
        *(200, 200, 404, 201, 200, 200, 200, 200, 200, 204, 201, 204, 200, 200, 200),
        *(200, 200, 200, 204),
    ]
