"""Gemini CLI's and Codex CLI's transcripts read as Claude Code's (docs/design.md §28): lines
copied from real runs of Gemini CLI 0.61.0 and Codex 0.171.0 become user and assistant entries
with the person's words only; bookkeeping is passed over; a line of an unknown format version
is skipped and counted, never guessed at."""

from __future__ import annotations

import json

from memapp.memdir.agent_transcripts import codex_entry, gemini_entry
from memapp.memdir.transcripts import parse_entry, read_entries

GEMINI_LINES = [
    {
        "sessionId": "01d3c0bb-95de-4a5e-9f68-81a0f47fae28",
        "projectHash": "a5eadc6d",
        "startTime": "2026-11-26T11:28:52.429Z",
        "lastUpdated": "2026-11-26T11:28:52.429Z",
        "kind": "main",
    },
    {
        "$set": {
            "messages": [
                {
                    "id": "d049",
                    "type": "user",
                    "content": [{"text": "<session_context>x</session_context>"}],
                }
            ]
        }
    },
    {
        "id": "6ffcc6b9-6ecd-427f-8b75-c18654996e46",
        "timestamp": "2026-11-26T11:30:19.878Z",
        "type": "user",
        "content": [
            {"text": "<hook_context>CTX-SessionStart</hook_context>\n\nWhat is the plan?"},
            {"text": "<hook_context>CTX-BeforeAgent</hook_context>"},
        ],
        "displayContent": [
            {"text": "<hook_context>CTX-SessionStart</hook_context>\n\nWhat is the plan?"}
        ],
    },
    {"$set": {"lastUpdated": "2026-11-26T11:30:19.878Z"}},
    {
        "id": "7e21d139-2510-4d03-bafd-926aaf2a05c7",
        "timestamp": "2026-11-26T11:30:20.076Z",
        "type": "gemini",
        "content": "Ship on Friday; token ghp_abcdefghijklmnopqrstuvwxyz0123456789 is set.",
        "thoughts": [],
        "tokens": {"input": 10, "output": 2},
        "model": "gemini-3.1-pro-preview",
        "toolCalls": [{"id": "c1", "name": "read_file", "args": {"file_path": "/src/a.py"}}],
    },
    {"id": "i1", "timestamp": "2026-11-26T11:30:21Z", "type": "info", "content": "Saved."},
    {"id": "x1", "timestamp": "2026-11-26T11:30:22Z", "type": "model_v2", "parts": []},
    {"message": "a record of another format version"},
]

CODEX_LINES = [
    {
        "timestamp": "2026-11-26T11:40:24.474Z",
        "ordinal": 0,
        "type": "session_meta",
        "payload": {"id": "01a2"},
    },
    {
        "timestamp": "2026-11-26T11:40:24.5Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "id": "m1",
            "role": "developer",
            "content": [{"type": "input_text", "text": "CTX-SessionStart"}],
        },
    },
    {
        "timestamp": "2026-11-26T11:40:24.6Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "id": "m2",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "<environment_context>\n  <cwd>/tmp/p</cwd>\n</environment_context>",
                }
            ],
        },
    },
    {"timestamp": "2026-11-26T11:40:24.7Z", "type": "world_state", "payload": {"full": True}},
    {
        "timestamp": "2026-11-26T11:40:24.8Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "id": "m3",
            "role": "user",
            "content": [{"type": "input_text", "text": "What is the plan?"}],
        },
    },
    {
        "timestamp": "2026-11-26T11:40:24.9Z",
        "type": "event_msg",
        "payload": {"type": "item_completed"},
    },
    {
        "timestamp": "2026-11-26T11:40:25.0Z",
        "type": "response_item",
        "payload": {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command": ["ls"]}',
            "call_id": "call_1",
        },
    },
    {
        "timestamp": "2026-11-26T11:40:25.1Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "id": "msg_fake",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Fake answer.", "annotations": []}],
        },
    },
    {
        "timestamp": "2026-11-26T11:40:25.2Z",
        "type": "token_usage_record",
        "payload": {"thread_id": "01a2"},
    },
    {"timestamp": "2026-11-26T11:40:25.3Z", "type": "thread_snapshot_v9", "payload": {}},
    {"timestamp": "2026-11-26T11:40:25.4Z", "kind": "response_item", "item": {"type": "message"}},
]


def _write(tmp_path, lines, extra: bytes = b"") -> str:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines) + extra)
    return str(path)


def test_a_gemini_session_file_reads_as_the_persons_and_the_models_words(tmp_path):
    read = read_entries(_write(tmp_path, GEMINI_LINES, b"{not json\n"), convert=gemini_entry)

    entries = [parse_entry(e) for e in read.entries]
    assert [(e.type, e.prose) for e in entries] == [
        ("user", "What is the plan?"),
        ("assistant", "Ship on Friday; token [REDACTED:GitHub personal access token] is set."),
    ]
    assert entries[1].tools[0].name == "read_file"
    assert entries[1].tools[0].argument == "/src/a.py"
    assert entries[0].is_user_prose
    assert dict(read.skipped) == {"unknown_format": 2, "not_json": 1}
    assert read.entries[0]["agent"] == "gemini-cli"


def test_a_gemini_message_written_again_unchanged_is_one_entry(tmp_path):
    message = GEMINI_LINES[4]
    again = {**message, "tokens": {"input": 99}}  # Gemini CLI rewrites a record when it changes
    read = read_entries(_write(tmp_path, [message, again]), convert=gemini_entry)
    assert len({e["uuid"] for e in read.entries}) == 1


def test_a_codex_rollout_reads_as_the_persons_and_the_models_words(tmp_path):
    read = read_entries(_write(tmp_path, CODEX_LINES), convert=codex_entry)

    entries = [parse_entry(e) for e in read.entries]
    assert [(e.type, e.prose) for e in entries] == [
        ("user", "What is the plan?"),
        ("assistant", ""),
        ("assistant", "Fake answer."),
    ]
    assert entries[1].tools[0].name == "shell"
    assert dict(read.skipped) == {"unknown_format": 2}


def test_the_converters_refuse_what_is_not_an_object():
    for convert in (gemini_entry, codex_entry):
        for value in (None, [], "text", 3):
            try:
                convert(value)
            except ValueError as exc:
                assert getattr(exc, "reason", "") == "not_object"
            else:
                raise AssertionError(f"{convert.__name__} took {value!r}")
