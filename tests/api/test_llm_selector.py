"""The LLM selector of recall (docs/design.md §7), through the real `anthropic` SDK and a fake
server.

The fake Messages API runs on 127.0.0.1 (tests/api/fake_anthropic.py); memhub reaches it through
`ANTHROPIC_BASE_URL`, exactly as it would reach the real API.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memapp.stores.events import flush_events
from memapp.stores.flags import set_flag
from memapp.stores.models import Event, Project
from memapp.stores.projects import resolve_store
from memapp.stores.recall import SELECTOR_SYSTEM
from tests.api.fake_anthropic import FakeAnthropic
from tests.conftest import write_memory

pytestmark = pytest.mark.django_db

AGENT_DIR = "/home/alice/.claude/projects/-home-alice-app/memory"
SCHEMA = {
    "type": "object",
    "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
    "required": ["selected_memories"],
    "additionalProperties": False,
}


def at(stamp: str) -> int:
    """ns since the epoch of an ISO time, to give files exact mtimes."""
    return int(datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()) * 10**9


def put(directory: Path, filename: str, stamp: str, *fields: str, extra_ms: int = 0) -> None:
    path = write_memory(directory, filename, *fields) if fields else directory / filename
    if not fields:
        path.write_text("Loose notes without a header.\n")
    mtime = at(stamp) + extra_ms * 10**6
    os.utime(path, ns=(mtime, mtime))


@pytest.fixture
def fake(settings):
    with FakeAnthropic() as server:
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = server.url
        settings.MEMHUB_RECALL_TIMEOUT = 5.0
        yield server


@pytest.fixture
def stores(alice):
    """Alice's private store and the project's team store, with files of known mtimes."""
    private = resolve_store(alice, "acme/app", "private")
    team = resolve_store(alice, "acme/app", "team")
    p, t = Path(private.path), Path(team.path)
    put(
        p,
        "feedback_testing.md",
        "2026-03-28T10:30:00",
        "Integration tests use a real database",
        "Integration tests must hit a real database, not mocks",
        "feedback",
    )
    put(
        t,
        "project_deploy.md",
        "2026-03-25T09:15:00",
        "Deploys go through ArgoCD",
        "Deploys to production go through ArgoCD, never kubectl apply",
        "project",
    )
    put(
        p,
        "reference_grep.md",
        "2026-03-20T08:00:00",
        "Grep usage",
        "How to use the Grep tool: regex syntax and flags",
        "reference",
        extra_ms=500,
    )
    put(
        p,
        "project_freeze.md",
        "2026-03-01T00:00:00",
        "Merge freeze",
        "Merge freeze on main from 2026-03-05 for the mobile release",
        "project",
    )
    put(p, "notes.md", "2026-02-01T12:00:00")
    (p / "MEMORY.md").write_text("- [Real DB](feedback_testing.md) — no mocks\n")
    return private, team


MANIFEST = [
    "- [feedback] {d}feedback_testing.md (2026-03-28T10:30:00.000Z): "
    "Integration tests must hit a real database, not mocks",
    "- [project] {d}team/project_deploy.md (2026-03-25T09:15:00.000Z): "
    "Deploys to production go through ArgoCD, never kubectl apply",
    "- [reference] {d}reference_grep.md (2026-03-20T08:00:00.500Z): "
    "How to use the Grep tool: regex syntax and flags",
    "- [project] {d}project_freeze.md (2026-03-01T00:00:00.000Z): "
    "Merge freeze on main from 2026-03-05 for the mobile release",
    "- {d}notes.md (2026-02-01T12:00:00.000Z)",
]


def manifest(prefix: str = "", skip: tuple[str, ...] = ()) -> str:
    lines = [line.format(d=prefix) for line in MANIFEST]
    return "\n".join(line for line in lines if not any(s in line for s in skip))


def recall(client, **body):
    response = client.post("/api/v1/recall", {"project": "acme/app", **body}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_selector_sends_the_exact_request_and_its_picks_are_recalled(alice_api, fake, stores):
    fake.answer(["feedback_testing.md"])
    body = recall(
        alice_api, query="why do the integration tests fail?", recent_tools=["Bash", "Grep"]
    )

    assert len(fake.requests) == 1
    sent = fake.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.headers.get("x-api-key") == "sk-test" or (
        sent.headers.get("authorization") == "Bearer sk-test"
    )
    assert set(sent.body) == {"model", "max_tokens", "system", "messages", "output_config"}
    assert sent.body["model"] == "claude-sonnet-4-6"
    assert sent.body["max_tokens"] == 256
    assert sent.body["system"] == SELECTOR_SYSTEM.format(limit=5)
    assert sent.body["messages"] == [
        {
            "role": "user",
            "content": "Query: why do the integration tests fail?\n\n"
            f"Available memories:\n{manifest()}\n\n"
            "Recently used tools: Bash, Grep",
        }
    ]
    assert sent.body["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}

    assert body["selector"] == "llm" and body["fallback_reason"] is None
    [memory] = body["memories"]
    assert memory["path"] == "feedback_testing.md"
    assert memory["reason"] == "chosen by the model"
    assert memory["content"].startswith("---\nname: Integration tests use a real database\n")
    assert body["rendered"].startswith("<system-reminder>\n")
    assert "\nMemory: feedback_testing.md:\n\n---\nname: Integration" in body["rendered"]


def test_the_system_prompt_asks_for_clearly_useful_memories_and_tool_warnings():
    prompt = SELECTOR_SYSTEM.format(limit=5).lower()
    assert "clearly" in prompt and "at most 5" in prompt
    assert "empty list" in prompt
    assert "recently used tools" in prompt
    for kept in ("gotchas", "known issues", "warn"):
        assert kept in prompt


def test_the_manifest_names_memories_relative_to_the_store_the_answer_by_the_agents_paths(
    alice_api, fake, stores
):
    fake.answer(["team/project_deploy.md"])
    body = recall(alice_api, query="how do we deploy?", memory_dir=AGENT_DIR + "/")

    content = fake.requests[0].body["messages"][0]["content"]
    assert content == f"Query: how do we deploy?\n\nAvailable memories:\n{manifest()}"
    assert AGENT_DIR not in content  # absolute paths cost tokens inside the hook's budget
    assert "Recently used tools" not in content
    [memory] = body["memories"]
    assert memory["path"] == f"{AGENT_DIR}/team/project_deploy.md"
    assert memory["scope"] == "team"
    assert f"Memory: {AGENT_DIR}/team/project_deploy.md:" in memory["header"]


def test_already_surfaced_memories_are_not_offered_to_the_model(alice_api, fake, stores):
    recall(
        alice_api,
        query="tests",
        memory_dir=AGENT_DIR,
        already_surfaced=[f"{AGENT_DIR}/feedback_testing.md", f"{AGENT_DIR}/notes.md"],
    )
    content = fake.requests[0].body["messages"][0]["content"]
    assert content.endswith(manifest(skip=("feedback_testing.md", "notes.md")))
    assert "feedback_testing.md" not in content


def test_scope_limits_the_manifest(alice_api, fake, stores):
    recall(alice_api, query="deploy", scope="private")
    assert "team/" not in fake.requests[0].body["messages"][0]["content"]
    recall(alice_api, query="deploy", scope="team")
    assert (
        fake.requests[1]
        .body["messages"][0]["content"]
        .endswith(
            "Available memories:\n" + manifest(skip=("feedback", "reference", "freeze", "notes"))
        )
    )


def test_the_recall_model_flag_chooses_the_model(alice_api, fake, stores, alice):
    set_flag("recall_model", "claude-opus-4-6", user=alice)
    recall(alice_api, query="tests")
    assert fake.requests[0].body["model"] == "claude-opus-4-6"


def test_recall_max_caps_what_the_model_may_pick(alice_api, fake, stores, alice):
    set_flag("recall_max", 2, user=alice)
    fake.answer(["feedback_testing.md", "project_freeze.md", "team/project_deploy.md"])
    body = recall(alice_api, query="anything at all")
    assert fake.requests[0].body["system"] == SELECTOR_SYSTEM.format(limit=2)
    assert "at most 2" in fake.requests[0].body["system"]
    assert [m["path"] for m in body["memories"]] == ["feedback_testing.md", "project_freeze.md"]


def test_unknown_names_in_the_answer_are_dropped(alice_api, fake, stores):
    fake.answer(
        [
            "nope.md",
            "feedback_testing.md",
            "../../etc/passwd",
            "MEMORY.md",
            "feedback_testing.md",
            "/elsewhere/project_freeze.md",
        ]
    )
    body = recall(alice_api, query="tests")
    assert body["selector"] == "llm" and body["fallback_reason"] is None
    assert [m["path"] for m in body["memories"]] == ["feedback_testing.md"]


def test_an_answer_of_only_unknown_names_recalls_nothing(alice_api, fake, stores):
    # Unknown names are dropped (docs/design.md §7); the model answered, so this is not an error and
    # offline recall is not asked for a second opinion.
    fake.answer(["hallucinated.md", "team/also_missing.md"])
    body = recall(alice_api, query="integration tests real database")
    assert body["selector"] == "llm" and body["fallback_reason"] is None
    assert body["memories"] == [] and body["rendered"] == ""


def test_an_empty_answer_recalls_nothing(alice_api, fake, stores):
    fake.answer([])
    body = recall(alice_api, query="integration tests real database")
    assert (body["selector"], body["memories"], body["rendered"]) == ("llm", [], "")


def assert_offline_fallback(body, reason_prefix: str) -> None:
    assert body["selector"] == "offline"
    assert body["fallback_reason"].startswith(reason_prefix), body["fallback_reason"]
    assert [m["path"] for m in body["memories"]] == ["feedback_testing.md"]
    assert body["memories"][0]["reason"].startswith("matches: ")
    assert "Memory: feedback_testing.md:" in body["rendered"]


QUERY = "should integration tests use a real database or mocks?"


def test_a_timeout_falls_back_to_offline_recall(alice_api, fake, stores, settings):
    settings.MEMHUB_RECALL_TIMEOUT = 0.3
    fake.stall(10)
    started = time.monotonic()
    body = recall(alice_api, query=QUERY)
    assert time.monotonic() - started < 4  # one attempt and one retry, not the SDK's 600 s
    assert_offline_fallback(body, "APITimeoutError")
    assert len(fake.requests) == 2  # max_retries=1


def test_an_overloaded_api_falls_back_to_offline_recall(alice_api, fake, stores):
    fake.overloaded()
    body = recall(alice_api, query=QUERY)
    assert_offline_fallback(body, "OverloadedError")
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("{not json", "JSONDecodeError"),
        ('Sure! Here are the memories: ["feedback_testing.md"]', "JSONDecodeError"),
        ('{"chosen": ["feedback_testing.md"]}', "KeyError"),
        ('{"selected_memories": "feedback_testing.md"}', "ValueError"),
    ],
)
def test_a_malformed_answer_falls_back_to_offline_recall(alice_api, fake, stores, text, reason):
    fake.answer_text(text)
    body = recall(alice_api, query=QUERY)
    assert_offline_fallback(body, reason)
    assert len(fake.requests) == 1  # a 200 is not retried


def test_the_fallback_is_recorded_in_the_recall_event(alice_api, fake, stores, alice):
    fake.overloaded()
    recall(alice_api, query=QUERY)
    fake.answer(["feedback_testing.md", "project_freeze.md"])
    recall(alice_api, query=QUERY)
    flush_events()
    first, second = Event.objects.filter(kind="recall").order_by("pk")
    assert first.user == alice and first.project.key == "acme/app"
    assert first.fields["selector"] == "offline"
    assert first.fields["error"].startswith("OverloadedError")
    assert first.fields["candidates"] == 5 and first.fields["selected"] == 1
    assert second.fields["selector"] == "llm" and second.fields["error"] is None
    assert second.fields["selected"] == 2
    assert "real database" not in json.dumps([first.fields, second.fields])


def test_offline_only_flag_never_calls_the_model(alice_api, fake, stores, alice):
    set_flag("recall_offline_only", True, user=alice)
    body = recall(alice_api, query=QUERY)
    assert fake.requests == []
    assert body["selector"] == "offline" and body["fallback_reason"] is None
    assert [m["path"] for m in body["memories"]] == ["feedback_testing.md"]


def test_offline_only_can_be_set_for_one_project(alice_api, fake, stores, alice):
    private, _ = stores
    set_flag("recall_offline_only", True, project=private.project, user=alice)
    recall(alice_api, query=QUERY)
    assert fake.requests == []


def test_without_a_key_the_model_is_never_called(alice_api, fake, stores, settings):
    settings.ANTHROPIC_API_KEY = ""
    body = recall(alice_api, query=QUERY)
    assert fake.requests == []
    assert body["selector"] == "offline" and body["fallback_reason"] is None


def test_an_empty_store_never_calls_the_model(bob_api, bob, fake):
    Project.objects.create(key="acme/app").members.add(bob)
    body = recall(bob_api, query=QUERY)
    assert fake.requests == []
    assert body["memories"] == [] and body["rendered"] == ""


# --- within the caller's budget (docs/design.md §7) --------------------------------------------

BUDGETED = "integration tests real database mocks"


def until(check, seconds: float = 15.0):
    """The first true answer of `check`, asked every 50 ms for up to `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        answer = check()
        if answer or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)  # the model's thread keeps its answer in the cache table
def test_a_model_slower_than_the_budget_gives_the_offline_picks_now_and_its_own_next_time(
    alice_api, fake, stores
):
    fake.answer(["project_freeze.md"], delay=1.5)
    started = time.monotonic()

    first = recall(alice_api, query=BUDGETED, wait_ms=150)

    assert time.monotonic() - started < 1.5  # not held for the model
    assert first["selector"] == "offline"
    assert first["fallback_reason"].startswith("pending: the model had not answered within")
    assert [m["path"] for m in first["memories"]] == ["feedback_testing.md"]

    # The model answers meanwhile, in the server's own thread; asking again meanwhile joins
    # that question rather than asking another.
    def picked_by_the_model():
        body = recall(alice_api, query=BUDGETED, wait_ms=150)
        return body if body["selector"] == "llm" else None

    second = until(picked_by_the_model)

    assert second["fallback_reason"] is None
    assert [m["path"] for m in second["memories"]] == ["project_freeze.md"]
    assert len(fake.requests) == 1  # kept, never asked again


@pytest.mark.django_db(transaction=True)
def test_the_kept_answer_is_for_the_same_query_and_the_same_memories_only(alice_api, fake, stores):
    private, _ = stores
    fake.answer(["feedback_testing.md"])
    recall(alice_api, query=BUDGETED)
    recall(alice_api, query=BUDGETED)
    assert len(fake.requests) == 1

    recall(alice_api, query="how do we deploy?")
    assert len(fake.requests) == 2  # another query
    put(Path(private.path), "feedback_new.md", "2026-04-01T00:00:00", "New", "A new memory", "user")
    private.scanned_at = None  # as after the next rescan
    private.save(update_fields=["scanned_at"])
    recall(alice_api, query=BUDGETED)
    assert len(fake.requests) == 3  # the store changed: the manifest the model sees changed


def test_a_model_within_the_budget_is_used_at_once(alice_api, fake, stores):
    fake.answer(["project_freeze.md"], delay=0.1)

    body = recall(alice_api, query=BUDGETED, wait_ms=8000)

    assert (body["selector"], [m["path"] for m in body["memories"]]) == (
        "llm",
        ["project_freeze.md"],
    )


def test_without_a_budget_recall_waits_for_the_model(alice_api, fake, stores):
    fake.answer(["project_freeze.md"], delay=0.4)

    body = recall(alice_api, query=BUDGETED)

    assert body["selector"] == "llm"


@pytest.mark.django_db(transaction=True)  # the model's thread keeps what nobody waited for
def test_a_budget_of_nothing_still_answers_offline(alice_api, fake, stores):
    fake.answer(["project_freeze.md"], delay=0.4)

    body = recall(alice_api, query=BUDGETED, wait_ms=0)

    assert body["selector"] == "offline" and body["fallback_reason"].startswith("pending:")
    assert [m["path"] for m in body["memories"]] == ["feedback_testing.md"]
