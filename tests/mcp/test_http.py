"""memhub's MCP server over Streamable HTTP, driven by the SDK's own client."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from django.utils import timezone

from memapp.lifecycle.models import Proposal
from memapp.stores.actions import do_put_files, do_save_memory
from memapp.stores.flags import set_flag
from memapp.stores.members import do_remove_member
from memapp.stores.models import ApiToken, Event, MemoryVersion, Project, TrashItem
from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token
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


def test_it_promises_no_change_notifications_it_cannot_send(server):
    """A sessionless server has no stream to push list changes on: Claude Code, promised
    `listChanged`, waits half a minute for a `subscriptions/listen` stream before listing."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    answer = httpx2.post(
        f"{server.url}/mcp/{SLUG}/",
        json={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
        headers={
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {server.token}",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "server/discover",
        },
    )
    assert answer.status_code == 200, answer.text
    capabilities = answer.json()["result"]["capabilities"]
    assert set(capabilities) >= {"tools", "resources", "prompts"}
    promised = [kind for kind, given in capabilities.items() if given.get("listChanged")]
    assert promised == [] and not capabilities["resources"].get("subscribe")


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


def test_a_get_is_told_there_is_no_stream_at_once(server):
    """The spec's answer for a server that offers no stream: 405, not a request held open."""
    answer = httpx2.get(
        f"{server.url}/mcp/{SLUG}/",
        headers={"Authorization": f"Bearer {server.token}", "Accept": "text/event-stream"},
        timeout=5,
    )
    assert answer.status_code == 405
    assert "POST" in answer.headers["Allow"]
    assert answer.json()["error"]["message"].startswith("memhub's MCP server has no stream")
    assert httpx2.get(f"{server.url}/mcp/{SLUG}/").status_code == 401  # asked who first


def test_arguments_a_tool_cannot_take_are_named_plainly(server):
    async def work(client):
        return await client.call_tool("recall", {"query": 5, "limit": "x"})

    result = over_http(f"{server.url}/mcp/{SLUG}/", server.token, work)
    assert result.is_error
    [content] = result.content
    assert content.text.startswith("recall was called with arguments it cannot take: query: ")
    assert "pydantic" not in content.text and "recallArguments" not in content.text


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


def _tools(server, path=f"/mcp/{SLUG}/", token=None):
    """Call tools in one connection: a list of (name, arguments) -> their results."""

    def run(*calls):
        async def work(client):
            return [await client.call_tool(name, args) for name, args in calls]

        return over_http(f"{server.url}{path}", token or server.token, work)

    return run


TOPIC = "---\nname: Build\ndescription: How to build\ntype: project\n---\nRun make.\n"


def test_the_memory_tool_writes_through_the_api_write_path_when_changes_apply_at_once(
    server, alice
):
    store = resolve_store(alice, SLUG, "private")
    set_flag("lifecycle_apply", "auto", store.project)
    results = _tools(server)(
        ("memory", {"command": "create", "path": "/memories/build.md", "file_text": TOPIC}),
        (
            "memory",
            {
                "command": "str_replace",
                "path": "/memories/build.md",
                "old_str": "Run make.",
                "new_str": "Run make -j8.",
            },
        ),
        (
            "memory",
            {
                "command": "insert",
                "path": "/memories/build.md",
                "insert_line": 6,
                "insert_text": "Then make test.",
            },
        ),
        ("memory", {"command": "view", "path": "/memories/build.md"}),
        (
            "memory",
            {
                "command": "rename",
                "old_path": "/memories/build.md",
                "new_path": "/memories/building.md",
            },
        ),
        ("memory", {"command": "view", "path": "/memories"}),
    )
    assert [r.is_error for r in results] == [False] * 6, [_text(r) for r in results]
    assert "     6\tRun make -j8." in _text(results[3])
    assert "     7\tThen make test." in _text(results[3])
    assert "/memories/building.md" in _text(results[5])
    root = Path(store.path)
    assert not (root / "build.md").exists()
    assert (root / "building.md").read_text().endswith("Run make -j8.\nThen make test.\n")
    assert "- [Build](building.md) — How to build" in (root / "MEMORY.md").read_text()
    assert "build.md)" not in (root / "MEMORY.md").read_text()
    assert MemoryVersion.objects.filter(store=store, path="building.md").exists()
    assert Event.objects.filter(kind="memory_written", store=store).count() == 4

    deleted = _tools(server)(("memory", {"command": "delete", "path": "/memories/building.md"}))
    assert _text(deleted[0]) == "Deleted /memories/building.md."
    assert not (root / "building.md").exists()
    assert TrashItem.objects.filter(store=store, path="building.md").exists()


def test_in_review_mode_a_write_becomes_a_proposal_and_nothing_is_written(server, alice):
    store = resolve_store(alice, SLUG, "private")
    result = _tools(server)(
        ("memory", {"command": "create", "path": "/memories/build.md", "file_text": TOPIC})
    )[0]
    assert not result.is_error
    proposal = Proposal.objects.get(owner=alice)
    assert f"Proposal #{proposal.pk} waits for a person" in _text(result)
    assert f"{server.url}/proposals/{proposal.pk}/" in _text(result)
    assert not (Path(store.path) / "build.md").exists()
    change = proposal.changes.get()
    assert (change.action, change.key, change.name, change.body) == (
        "create",
        "build.md",
        "Build",
        "Run make.\n",
    )
    listed = _tools(server)(("proposals", {}))[0]
    assert f"#{proposal.pk}" in _text(listed) and "create build.md" in _text(listed)


def test_a_team_store_write_becomes_a_proposal_even_when_changes_apply_at_once(
    server, alice, project
):
    team = resolve_store(alice, SLUG, "team")
    set_flag("lifecycle_apply", "auto", project)
    set_flag("team_memory", True, project)
    result = _tools(server)(
        ("memory", {"command": "create", "path": "/memories/team/build.md", "file_text": TOPIC})
    )[0]
    assert "team memory takes changes through review" in _text(result)
    proposal = Proposal.objects.get(owner=alice)
    assert proposal.store == team
    assert not (Path(team.path) / "build.md").exists()


def test_a_second_user_sees_nothing_of_the_first(server, alice, bob, project):
    store = resolve_store(alice, SLUG, "private")
    do_save_memory(
        store,
        alice,
        name="Secret plan",
        description="Alice's private plan",
        memory_type="project",
        body="Alice keeps the launch plan private.\n",
    )
    _, bob_token = do_create_api_token(bob, "bob's laptop")
    run = _tools(server, token=bob_token)
    recalled, searched, viewed, listed = run(
        ("recall", {"query": "launch plan"}),
        ("search", {"query": "launch plan"}),
        ("memory", {"command": "view", "path": "/memories"}),
        ("proposals", {}),
    )
    for result in (recalled, searched, viewed, listed):
        assert "Alice" not in _text(result) and "launch" not in _text(result).split("'")[0]
    assert "project_secret_plan.md" not in _text(viewed)

    async def resources(client):
        return await client.list_resources()

    listing = over_http(f"{server.url}/mcp", bob_token, resources)
    assert not any("secret_plan" in str(r.uri) for r in listing.resources)


def test_search_log_resources_and_prompt(server, alice):
    store = resolve_store(alice, SLUG, "private")
    resolve_store(alice, SLUG, "team")  # no MEMORY.md in it yet
    do_save_memory(
        store,
        alice,
        name="Deploys",
        description="How deploys work",
        memory_type="project",
        body="Deploys go out on Tuesdays.\n",
    )
    do_save_memory(
        store,
        alice,
        name="Slow tests",
        description="The test suite takes twelve minutes on CI",
        memory_type="project",
        body="Run it with xdist.\n",
    )
    searched, logged, slow, speed, unrelated = _tools(server)(
        ("search", {"query": "tuesdays"}),
        ("log", {"text": "Moved the deploy to Wednesday", "type": "project"}),
        ("search", {"query": "slow tests"}),
        ("search", {"query": "pytest speed"}),  # through synonyms only
        ("search", {"query": "quantum origami"}),
    )
    assert "project_deploys.md" in _text(searched)
    assert "project_slow_tests.md" in _text(slow) and "project_slow_tests.md" in _text(speed)
    assert _text(unrelated).startswith("Nothing in your memories or past sessions matches")
    assert "Moved the deploy to Wednesday" in _text(logged)
    logs = list((Path(store.path) / "logs").rglob("*.md"))
    assert len(logs) == 1 and "[project] Moved the deploy to Wednesday" in logs[0].read_text()

    async def work(client):
        listing = await client.list_resources()
        uri = f"memhub://{SLUG}/private/project_deploys.md"
        read = await client.read_resource(uri)
        prompt = await client.get_prompt("memory", {"project": SLUG})
        every = [await client.read_resource(r.uri) for r in listing.resources]
        return listing, read, prompt, every

    listing, read, prompt, every = over_http(f"{server.url}/mcp", server.token, work)
    uris = {str(r.uri) for r in listing.resources}
    assert {
        f"memhub://{SLUG}/private/MEMORY.md",
        f"memhub://{SLUG}/private/project_deploys.md",
    } <= uris
    # Only what exists is listed: the team store, which has no MEMORY.md yet, lists none.
    assert f"memhub://{SLUG}/team/MEMORY.md" not in uris
    assert len(every) == len(listing.resources)
    assert "Deploys go out on Tuesdays." in read.contents[0].text
    assert "project_deploys.md" in prompt.messages[0].content.text


def test_bad_input_is_an_mcp_error_with_a_clear_message_and_nothing_written(server, alice):
    store = resolve_store(alice, SLUG, "private")
    set_flag("lifecycle_apply", "auto", store.project)
    huge = "---\nname: Huge\ndescription: big\ntype: project\n---\n" + "x" * 260_000
    secret = TOPIC + "token: ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" + "\n"
    results = _tools(server)(
        ("forget_everything", {}),
        ("search", {"query": "x", "limit": "many"}),
        (
            "memory",
            {"command": "create", "path": "/memories/../../etc/passwd.md", "file_text": TOPIC},
        ),
        ("memory", {"command": "create", "path": "/etc/passwd", "file_text": TOPIC}),
        ("memory", {"command": "create", "path": "/memories/huge.md", "file_text": huge}),
        ("memory", {"command": "create", "path": "/memories/leak.md", "file_text": secret}),
        ("memory", {"command": "create", "path": "/memories/MEMORY.md", "file_text": "x"}),
        ("memory", {"command": "delete", "path": "/memories/missing.md"}),
    )
    messages = [_text(r) for r in results]
    assert all(r.is_error for r in results), messages
    assert "Unknown tool: forget_everything" in messages[0]
    assert "limit" in messages[1]
    assert "Refused (invalid_key)" in messages[2]
    assert "Paths start with /memories/" in messages[3]
    assert "Refused (entry_too_large)" in messages[4]
    assert "Refused (secret_detected)" in messages[5] and "ghp_" not in messages[5]
    assert "MEMORY.md is the index" in messages[6]
    assert "/memories/missing.md does not exist" in messages[7]
    assert sorted(p.name for p in Path(store.path).rglob("*")) in ([], ["MEMORY.md"])
    assert not Proposal.objects.exists()


def test_view_never_reads_or_lists_outside_the_store(server, project, alice, bob):
    """`..` in a viewed path once read any file the server could (its secret key) and listed
    every other person's store beside the caller's."""
    mine = resolve_store(alice, SLUG, "private")
    theirs = resolve_store(bob, SLUG, "private")
    (Path(mine.path) / "mine.md").write_text(TOPIC)
    (Path(theirs.path) / "theirs.md").write_text(TOPIC.replace("Run make.", "Bob's plan."))
    outside = Path(mine.path).parent.parent / "outside.md"
    outside.write_text("server-only text\n")
    hops = "/".join([".."] * len(outside.relative_to(Path(mine.path).anchor).parts))
    results = _tools(server)(
        ("memory", {"command": "view", "path": "/memories/.."}),
        ("memory", {"command": "view", "path": f"/memories/../{Path(theirs.path).name}"}),
        ("memory", {"command": "view", "path": f"/memories/../{Path(theirs.path).name}/theirs.md"}),
        ("memory", {"command": "view", "path": "/memories/../../outside.md"}),
        ("memory", {"command": "view", "path": f"/memories/{hops}{outside}"}),
        ("memory", {"command": "view", "path": "/memories/sub/../../../outside.md"}),
    )
    messages = [_text(r) for r in results]
    assert all(r.is_error for r in results), messages
    assert all("Refused (invalid_key)" in m for m in messages), messages
    assert not any("Bob's plan" in m or "server-only" in m for m in messages)
    (listed, viewed) = _tools(server)(
        ("memory", {"command": "view", "path": "/memories"}),
        ("memory", {"command": "view", "path": "/memories/mine.md"}),
    )
    assert "/memories/mine.md" in _text(listed) and "theirs.md" not in _text(listed)
    assert "Run make." in _text(viewed)
    # Inside the store, only its memory files: not a credentials file beside them.
    (Path(mine.path) / ".env").write_text("TOKEN=server-only\n")
    (Path(mine.path) / "notes.txt").write_text("server-only notes\n")
    for name in (".env", "notes.txt"):
        (refused,) = _tools(server)(("memory", {"command": "view", "path": f"/memories/{name}"}))
        assert refused.is_error and "server-only" not in _text(refused), name


def test_a_token_revoked_mid_session_is_refused_at_the_next_call(server, alice):
    resolve_store(alice, SLUG, "private")

    async def work(client):
        first = await client.call_tool("proposals", {})
        ApiToken.objects.update(revoked_at=timezone.now())
        try:
            await client.call_tool("proposals", {})
        except Exception as exc:  # the SDK's error for an HTTP 401
            return first, exc
        return first, None

    first, refused = over_http(f"{server.url}/mcp/{SLUG}/", server.token, work)
    assert not first.is_error
    assert refused is not None and "Invalid or revoked token." in str(refused)


def test_a_read_token_reads_and_recalls_but_writes_nothing(server, alice):
    _, reader = do_create_api_token(alice, "dashboard", scope=ApiToken.Scope.READ)
    store = resolve_store(alice, SLUG, "private")
    listed, recalled, created, logged = _tools(server, token=reader)(
        ("memory", {"command": "view", "path": "/memories"}),
        ("recall", {"query": "anything"}),
        ("memory", {"command": "create", "path": "/memories/build.md", "file_text": TOPIC}),
        ("log", {"text": "deploy froze today"}),
    )
    assert not listed.is_error and not recalled.is_error
    for refused in (created, logged):
        assert refused.is_error
        assert _text(refused).endswith(
            ": Token 'dashboard' has the 'read' scope; this call needs 'write (own memory)': "
            "nothing was written."
        )
    assert not (Path(store.path) / "build.md").exists()
    assert not list(Path(store.path).glob("logs/**/*.md"))


def test_a_read_token_creates_no_project_where_a_write_token_would(server, sam):
    """Staff may create projects by using them, but not through a token that may only read."""
    _, reader = do_create_api_token(sam, "dashboard", scope=ApiToken.Scope.READ)
    _, writer = do_create_api_token(sam, "laptop", scope=ApiToken.Scope.WRITE)
    (recalled,) = _tools(server, path="/mcp/", token=reader)(
        ("recall", {"query": "deploys", "project": "acme/fresh"}),
    )
    assert recalled.is_error
    assert (
        _text(recalled) == "Error executing tool recall: No project 'acme/fresh' that you can use."
    )
    assert not Project.objects.filter(key="acme/fresh").exists()

    (recalled,) = _tools(server, path="/mcp/", token=writer)(
        ("recall", {"query": "deploys", "project": "acme/fresh"}),
    )
    assert not recalled.is_error
    assert Project.objects.get(key="acme/fresh").members.get() == sam


def test_a_team_file_kept_back_is_given_to_no_agent_until_it_is_fixed(server, alice, project):
    from teamsync.models import BlockedFile

    team = resolve_store(alice, SLUG, "team")
    do_save_memory(
        team,
        alice,
        name="Deploys",
        description="How deploys work",
        memory_type="project",
        body="Deploys go out on Tuesdays.\n",
    )
    BlockedFile.objects.create(store=team, key="project_deploys.md", reason="secret", hits=[])

    async def work(client):
        results = [
            await client.call_tool(name, args)
            for name, args in (
                ("memory", {"command": "view", "path": "/memories/team/project_deploys.md"}),
                ("memory", {"command": "view", "path": "/memories/team"}),
                ("search", {"query": "tuesdays"}),
                ("memory", {"command": "view", "path": "/memories/team/MEMORY.md"}),
            )
        ]
        listing = await client.list_resources()
        try:
            await client.read_resource(f"memhub://{SLUG}/team/project_deploys.md")
        except Exception as exc:  # the SDK's error for the tool's refusal
            return results, listing, str(exc)
        return results, listing, None

    (viewed, listed, searched, index), listing, read = over_http(
        f"{server.url}/mcp/{SLUG}/", server.token, work
    )
    assert "project_deploys.md" in (Path(team.path) / "MEMORY.md").read_text()
    assert not index.is_error and "project_deploys.md" not in _text(index)
    refusal = (
        "Team sync keeps /memories/team/project_deploys.md back from the team (a secret, a size "
        "or entry cap, or not text), so memhub gives it to no agent until a person fixes it: "
        "the Team sync page says why."
    )
    assert viewed.is_error and _text(viewed).endswith(refusal)
    assert "project_deploys.md" not in _text(listed)
    assert "Tuesdays" not in _text(searched) and "project_deploys" not in _text(searched)
    assert not any("project_deploys" in str(r.uri) for r in listing.resources)
    assert read is not None and refusal in read

    BlockedFile.objects.all().delete()  # fixed
    (viewed,) = _tools(server)(
        ("memory", {"command": "view", "path": "/memories/team/project_deploys.md"})
    )
    assert "Deploys go out on Tuesdays." in _text(viewed)


def test_team_memory_takes_a_team_write_token_and_a_non_member_leaves_nothing(
    server, alice, bob, charlie, project
):
    resolve_store(alice, SLUG, "team")
    _, writer = do_create_api_token(bob, "laptop", scope=ApiToken.Scope.WRITE)
    (created,) = _tools(server, token=writer)(
        ("memory", {"command": "create", "path": "/memories/team/build.md", "file_text": TOPIC})
    )
    assert created.is_error
    assert _text(created).endswith(
        ": Token 'laptop' has the 'write (own memory)' scope; this call needs 'team write': "
        "nothing was written."
    )
    assert not Proposal.objects.exists()

    _, outsider = do_create_api_token(charlie, "charlie's laptop")
    recalled, viewed = _tools(server, token=outsider)(
        ("recall", {"query": "deploys"}),
        ("memory", {"command": "view", "path": "/memories"}),
    )
    for refused in (recalled, viewed):
        assert refused.is_error and _text(refused).endswith(
            f"No project {SLUG!r} that you can use."
        )
    assert not project.stores.filter(owner=charlie).exists()


def test_a_view_range_outside_the_file_is_said_not_answered_with_nothing(server, alice):
    store = resolve_store(alice, SLUG, "private")
    (Path(store.path) / "build.md").write_text(TOPIC)  # six lines
    path = "/memories/build.md"
    middle, after, backwards = _tools(server)(
        ("memory", {"command": "view", "path": path, "view_range": [5, -1]}),
        ("memory", {"command": "view", "path": path, "view_range": [100, -1]}),
        ("memory", {"command": "view", "path": path, "view_range": [5, 2]}),
    )
    assert _text(middle) == "     5\t---\n     6\tRun make."
    assert after.is_error and "view_range starts at line 100; the file has 6." in _text(after)
    assert backwards.is_error and "ends at line 2, before its first line 5" in _text(backwards)


def test_a_member_taken_out_of_the_project_reads_no_more_of_its_team_memory(
    server, alice, bob, project
):
    """Bob's token stays his, and so does his private store; the team's files, listing and
    resources are gone for him from the next request on (docs/design.md §1)."""
    team = resolve_store(alice, SLUG, "team")
    do_put_files(team, alice, {"project_build.md": TOPIC}, via="api")
    resolve_store(bob, SLUG, "private")
    _, bob_token = do_create_api_token(bob, "bob's laptop")
    calls = (
        ("memory", {"command": "view", "path": "/memories/team/project_build.md"}),
        ("memory", {"command": "view", "path": "/memories/team"}),
        ("recall", {"query": "how to build with make"}),
    )

    async def resources(client):
        return await client.list_resources()

    def team_uris():
        listing = over_http(f"{server.url}/mcp/{SLUG}/", bob_token, resources)
        return [str(r.uri) for r in listing.resources if "/team/" in str(r.uri)]

    before = _tools(server, token=bob_token)(*calls)
    assert all(
        "Run make" in _text(result) or "project_build.md" in _text(result) for result in before
    )
    assert team_uris()
    do_remove_member(project, bob, by=alice)
    viewed, listed, recalled = _tools(server, token=bob_token)(*calls)
    for refused in (viewed, listed):
        assert refused.is_error
        assert _text(refused).endswith("This project has no team memory you can use.")
    assert "Run make" not in _text(recalled)
    assert team_uris() == []
