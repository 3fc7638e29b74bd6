"""Reading Claude Code transcripts from a cursor: kept entries, skipped lines counted by reason,
the half-written last line left for later, batches under 200 KB, secrets redacted; and what
extraction reads of them (turns, writes into the memory dir, the request's messages).

Django-free; the transcripts are written as the real client writes them (tests/transcripts.py).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memapp.memdir.transcripts import (
    MAX_BATCH_BYTES,
    EntryError,
    count_turns,
    entry_key,
    parse_entry,
    read_entries,
    render_messages,
    wrote_memory,
)
from tests.memdir.test_secret_rules import fake_tokens
from tests.transcripts import Transcript

MEMORY = "/home/alice/.claude/projects/-home-alice-src-widgets/memory"


@pytest.fixture
def session() -> Transcript:
    t = Transcript()
    t.snapshot()
    t.user("The integration tests are slow. Can you look at why?")
    call = t.tool_use("Bash", {"command": "pytest tests/integration -x --durations=5"}, "Running.")
    t.tool_result(call, "5 slowest durations\n12.1s setup test_orders\n" * 3)
    t.assistant("The fixtures rebuild the database for every test.")
    t.user("remember that we deploy on Fridays")
    t.write_memory(f"{MEMORY}/project_deploys.md", "---\nname: Deploys\n---\nFridays.\n")
    t.summary("Slow integration tests")
    return t


def test_it_keeps_user_assistant_and_summary_entries_and_counts_the_rest(tmp_path, session):
    path = session.write(tmp_path / "s.jsonl")
    result = read_entries(path)
    assert [e["type"] for e in result.entries] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "summary",
    ]
    assert result.skipped == {}  # the file-history snapshot is bookkeeping
    assert result.offset == path.stat().st_size
    assert not result.more


def test_a_line_that_is_not_json_or_not_utf8_is_skipped_and_counted(tmp_path, session):
    path = tmp_path / "s.jsonl"
    lines = session.lines().splitlines(keepends=True)
    raw = b"".join(
        [
            lines[1].encode(),
            b"{not json\n",
            b"[1, 2, 3]\n",
            b'{"type": "user", "message": {"content": "caf\xe9"}}\n',
            b"\x00\x01\x02binary\n",
            lines[2].encode(),
        ]
    )
    path.write_bytes(raw)
    result = read_entries(path)
    assert len(result.entries) == 2
    assert result.skipped == {"not_json": 2, "not_object": 1, "binary": 1}
    assert result.offset == len(raw)


def test_the_half_written_last_line_waits_and_the_cursor_stays_before_it(tmp_path, session):
    path = tmp_path / "s.jsonl"
    complete = session.lines()
    partial = json.dumps(session.user("and one more thing"))[:40]
    path.write_text(complete + partial, encoding="utf-8")
    first = read_entries(path)
    assert first.offset == len(complete.encode())
    assert first.skipped == {}
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(session.entries[-1])[40:] + "\n")
    rest = read_entries(path, first.offset)
    assert [e["message"]["content"] for e in rest.entries] == ["and one more thing"]
    assert rest.offset == path.stat().st_size


def test_a_ten_megabyte_tool_result_is_skipped_and_counted_and_the_rest_kept(tmp_path):
    t = Transcript()
    t.user("read the log")
    call = t.tool_use("Read", {"file_path": "/var/log/app.log"})
    t.tool_result(call, "x" * 10_000_000)  # the client writes it twice: 20 MB on one line
    t.assistant("The log is mostly noise.")
    path = t.write(tmp_path / "big.jsonl")
    result = read_entries(path)
    assert [e["type"] for e in result.entries] == ["user", "assistant", "assistant"]
    assert result.skipped == {"too_large": 1}
    assert result.offset == path.stat().st_size


def test_a_long_tool_output_is_cut_to_a_few_kilobytes(tmp_path):
    t = Transcript()
    call = t.tool_use("Bash", {"command": "cat build.log"})
    t.tool_result(call, "compiling module\n" * 60_000)  # 1 MB
    path = t.write(tmp_path / "long-output.jsonl")
    result = read_entries(path)
    assert len(result.entries) == 2
    assert len(json.dumps(result.entries[1])) < 64 * 1024
    assert "cut by memhub" in json.dumps(result.entries[1])


def test_batches_stay_under_200_kb_and_continue_where_they_stopped(tmp_path):
    t = Transcript()
    for n in range(400):
        t.turn(f"question {n}: " + "why is this slow? " * 40, f"answer {n}: " + "because " * 40)
    path = t.write(tmp_path / "long.jsonl")
    seen, offset, batches = [], 0, 0
    while True:
        result = read_entries(path, offset)
        assert len(json.dumps({"entries": result.entries})) < MAX_BATCH_BYTES
        seen += result.entries
        offset, batches = result.offset, batches + 1
        if not result.more:
            break
    assert batches > 2
    assert [e["uuid"] for e in seen] == [e["uuid"] for e in t.entries]


def test_a_file_replaced_by_a_shorter_one_is_read_from_the_start(tmp_path, session):
    path = session.write(tmp_path / "s.jsonl")
    result = read_entries(path, offset=path.stat().st_size + 500)
    assert len(result.entries) == 8


def test_secrets_are_redacted_before_the_entries_leave(tmp_path):
    tokens = fake_tokens(11)
    t = Transcript()
    t.user(f"deploy with GITHUB_TOKEN={tokens['github-pat']}")
    call = t.tool_use("Bash", {"command": "env"})
    t.tool_result(call, f"HOME=/home/alice\nOPENAI_API_KEY={tokens['openai-api-key']}\n")
    t.user("the hook is https://hooks.example.com/notify?access_token=Zx8Kq2LmN4pR7sT9vW1y")
    path = t.write(tmp_path / "s.jsonl")
    result = read_entries(path)
    text = json.dumps(result.entries)
    assert tokens["github-pat"] not in text
    assert tokens["openai-api-key"] not in text
    assert "Zx8Kq2LmN4pR7sT9vW1y" not in text
    assert "[REDACTED:GitHub personal access token]" in text
    assert "access_token=[REDACTED:Credential in a URL query string]" in text
    assert {hit.rule_id for hit in result.hits} == {
        "github-pat",
        "openai-api-key",
        "url-query-credential",
    }


def test_what_extraction_reads_of_a_session(session):
    entries = [parse_entry(e) for e in session.entries if e["type"] != "file-history-snapshot"]
    assert count_turns(entries) == 2
    assert wrote_memory(entries, MEMORY)
    assert not wrote_memory(entries, "/home/alice/.claude/projects/other/memory")
    assert not wrote_memory(entries, f"{MEMORY}-evil")
    assert render_messages(entries).splitlines() == [
        "[user] The integration tests are slow. Can you look at why?",
        "[assistant] Running.",
        "[tool call] Bash: pytest tests/integration -x --durations=5",
        "[assistant] The fixtures rebuild the database for every test.",
        "[user] remember that we deploy on Fridays",
        f"[tool call] Write: {MEMORY}/project_deploys.md",
    ]


def test_commands_meta_messages_and_sub_agents_are_not_user_prose():
    t = Transcript()
    t.user("<command-name>/clear</command-name>")
    t.user("Caveat: The messages below were generated by the user while running local commands.")
    t.user("a note from the harness", isMeta=True)
    t.user("what a sub-agent was asked", isSidechain=True)
    entries = [parse_entry(e) for e in t.entries]
    assert count_turns(entries) == 0


def test_sdk_sessions_are_not_interactive():
    t = Transcript(entrypoint="sdk-cli")
    t.user("summarise the diff")
    assert parse_entry(t.entries[0]).interactive is False
    assert parse_entry(Transcript().user("hi")).interactive is True


def test_entries_without_a_uuid_get_a_stable_key(session):
    summary = session.entries[-1]
    assert entry_key(summary) == f"summary:{summary['leafUuid']}"
    snapshot = session.entries[0]
    assert entry_key(snapshot) == entry_key(dict(reversed(list(snapshot.items()))))


def test_unknown_types_are_refused_with_their_reason():
    with pytest.raises(EntryError) as caught:
        parse_entry({"type": "telemetry", "operation": "dequeue"})
    assert (caught.value.reason, caught.value.counted) == ("unknown_type", True)


def test_the_agents_bookkeeping_is_passed_over_uncounted(tmp_path, session):
    """Types the real Claude Code CLI wrote in a one-turn `claude -p` session (2.1.x)."""
    bookkeeping = [
        {"type": "queue-operation", "operation": "enqueue", "content": "Which day?"},
        {"type": "attachment", "attachment": {"type": "hook_additional_context", "content": []}},
        {"type": "atis-latch", "atis": ""},
        {"type": "api-request", "request": {}},
        {"type": "last-prompt", "lastPrompt": "Which day?"},
        {"type": "cost-state", "costUSD": 0},
    ]
    path = tmp_path / "s.jsonl"
    lines = [json.dumps(entry) + "\n" for entry in bookkeeping + [{"type": "telemetry"}]]
    path.write_text("".join(lines) + session.lines(), encoding="utf-8")
    result = read_entries(path)
    assert result.skipped == {"unknown_type": 1}  # the telemetry line; the snapshot is bookkeeping
    assert [e["type"] for e in result.entries][:2] == ["user", "assistant"]


@given(st.binary(max_size=2000))
def test_any_bytes_read_without_error(data):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        path.write_bytes(data)
        result = read_entries(path)
        assert 0 <= result.offset <= len(data)
        assert data[result.offset :].count(b"\n") == 0 or result.more
