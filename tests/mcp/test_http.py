"""memhub's MCP server over Streamable HTTP, driven by the SDK's own client."""

from __future__ import annotations

import httpx2
import pytest

from memapp.stores.actions import do_save_memory
from memapp.stores.projects import resolve_store
from tests.client.conftest import SLUG
from tests.mcp.conftest import over_http

pytestmark = pytest.mark.django_db(transaction=True)


def _text(result) -> str:
    return "\n".join(block.text for block in result.content)


def test_it_lists_the_tools_with_schemas_and_hints(server):
    tools = over_http(f"{server.url}/mcp", server.token, lambda c: c.list_tools())
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == {"recall", "search", "memory", "log", "proposals"}
    assert by_name["search"].annotations.read_only_hint is True
    assert by_name["memory"].annotations.destructive_hint is True
    assert by_name["memory"].input_schema["properties"]["command"]["enum"] == [
        "view",
        "create",
        "str_replace",
        "insert",
        "delete",
        "rename",
    ]
    assert all(tool.description and "\n" not in tool.description for tool in tools.tools)


def test_without_a_token_it_answers_401_naming_the_resource_metadata(server):
    answer = httpx2.post(
        f"{server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401
    challenge = answer.headers["WWW-Authenticate"]
    assert f'resource_metadata="{server.url}/.well-known/oauth-protected-resource/mcp"' in challenge
    metadata = httpx2.get(f"{server.url}/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"] == f"{server.url}/mcp"
    assert metadata["bearer_methods_supported"] == ["header"]
    with pytest.raises(Exception):  # noqa: B017 (the SDK's own error for a refused connection)
        over_http(f"{server.url}/mcp", "mh_wrong", lambda c: c.list_tools())


def test_recall_answers_with_fresh_memories_from_the_path_form(server, alice):
    store = resolve_store(alice, SLUG, "private")
    do_save_memory(
        store,
        alice,
        name="Deploys",
        description="How deploys work",
        memory_type="project",
        body="Deploys go out on Tuesdays through the release train.\n",
    )

    async def work(client):
        return await client.call_tool("recall", {"query": "when do deploys go out?"})

    result = over_http(f"{server.url}/mcp/{SLUG}/", server.token, work)
    assert not result.is_error
    text = _text(result)
    assert "Memory (saved today): /memories/project_deploys.md:" in text
    assert "Tuesdays" in text
