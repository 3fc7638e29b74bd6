"""Request examples for the API docs (`/api/docs/`): one per body, as an agent would send it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample

TOPIC = (
    "---\nname: Real database in tests\ndescription: Integration tests hit a real database\n"
    "type: feedback\n---\nUse the real database.\n\n**Why:** mocks hid a broken migration.\n"
    "**How to apply:** every integration test.\n"
)


def _example(name: str, value: dict, summary: str = "") -> OpenApiExample:
    return OpenApiExample(name, value=value, summary=summary or name, request_only=True)


RESOLVE_STORE = _example(
    "Find my private store",
    {"project": "acme/app", "project_dirname": "-home-ana-app", "scope": "private"},
)
PUT_FILE = _example("A topic file", {"content": TOPIC})
SYNC_FILES = _example(
    "Upload one file, delete another",
    {
        "files": {"feedback_real_db.md": TOPIC},
        "delete": ["project_old_launch.md"],
        "base": {
            "feedback_real_db.md": "sha256:" + "3f" * 32,
            "project_old_launch.md": "sha256:" + "a1" * 32,
        },
    },
    "Only changed keys; `base` holds the checksums last seen",
)
REMEMBER = _example(
    "Remember feedback",
    {
        "project": "acme/app",
        "scope": "private",
        "name": "Real database in tests",
        "description": "Integration tests hit a real database",
        "type": "feedback",
        "body": "Use the real database.\n\n**Why:** mocks hid a broken migration.\n"
        "**How to apply:** every integration test.\n",
    },
)
FORGET = _example("Forget a memory", {"project": "acme/app", "path": "feedback_real_db.md"})
PROMPT = _example(
    "The prompt for a project", {"project": "acme/app", "memory_dir": "/home/ana/.claude/memory"}
)
RECALL = _example(
    "What helps with slow tests?",
    {
        "project": "acme/app",
        "query": "why are the integration tests slow?",
        "recent_tools": ["Bash", "Grep"],
        "already_surfaced": [],
        "session_id": "0b6f7c1e-5d2a-4c8e-9a51-3f0c2d9e7b10",
    },
)
MARK_SURFACED = _example(
    "The agent read a memory file",
    {
        "session_id": "0b6f7c1e-5d2a-4c8e-9a51-3f0c2d9e7b10",
        "paths": ["/home/ana/.claude/projects/-home-ana-app/memory/feedback_real_db.md"],
    },
)
SESSION_START = _example(
    "A session starts",
    {
        "project": "acme/app",
        "project_dirname": "-home-ana-app",
        "memory_dir": "/home/ana/.claude/projects/-home-ana-app/memory",
        "have": {"feedback_real_db.md": "sha256:" + "3f" * 32},
        "team_index": True,
    },
    "`have`: the checksum of each file the agent holds; the answer sends those that differ",
)
UPLOAD_SNAPSHOT = _example(
    "A snapshot and the user-scope memory",
    {
        "project_dirname": "-home-ana-widgets",
        "snapshot": {
            "snapshot.json": '{"updatedAt": "2026-03-05T09:30:00.000Z"}',
            "MEMORY.md": "- [Style](style.md) — style guide\n",
            "style.md": "---\nname: Style\ndescription: Style guide lives in docs/\n"
            "type: reference\n---\n",
        },
        "scopes": {"user": {"MEMORY.md": ""}},
    },
)
PUT_TEAM_MEMORY = _example(
    "Upsert two entries",
    {
        "entries": {
            "MEMORY.md": "- [Release freeze](project_release.md) — freeze on 2026-03-05\n",
            "project_release.md": "---\nname: Release freeze\ndescription: Release freeze "
            "2026-03-05\ntype: project\n---\nNo merges to main after 2026-03-05.\n",
        }
    },
)
SESSION_ENTRIES = _example(
    "One turn of a session",
    {
        "project": "acme/app",
        "project_dirname": "-home-ana-app",
        "memory_dir": "/home/ana/.claude/projects/-home-ana-app/memory",
        "cwd": "/home/ana/app",
        "entries": [
            {
                "type": "user",
                "uuid": "5c0f2a6e-1b7d-4e3a-9c2f-8d4b6a1e0f37",
                "parentUuid": None,
                "sessionId": "0b6f7c1e-5d2a-4c8e-9a51-3f0c2d9e7b10",
                "timestamp": "2026-03-05T10:00:07.000Z",
                "cwd": "/home/ana/app",
                "entrypoint": "cli",
                "message": {"role": "user", "content": "remember that we deploy on Fridays"},
            },
            {
                "type": "assistant",
                "uuid": "9e3d7b2a-6c1f-4a8e-b5d0-2f7c9a4e1b63",
                "parentUuid": "5c0f2a6e-1b7d-4e3a-9c2f-8d4b6a1e0f37",
                "sessionId": "0b6f7c1e-5d2a-4c8e-9a51-3f0c2d9e7b10",
                "timestamp": "2026-03-05T10:00:12.000Z",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            },
        ],
        "final": False,
        "skipped": {"not_json": 1},
    },
    "Entries after the session's cursor, redacted on the agent's machine",
)
APPROVE = _example("Approve two of the changes", {"changes": [12, 14]})
DEVICE_CODE = _example("Start a browser login", {"client_name": "dana-laptop"})
DEVICE_TOKEN = _example("Poll for the token", {"device_code": "k3J9…the device_code answered"})


def _answer(name: str, value: dict, summary: str = "") -> OpenApiExample:
    return OpenApiExample(name, value=value, summary=summary or name, response_only=True)


def _error(code: str, message: str, **details) -> OpenApiExample:
    body = {"error": {"code": code, "message": message, "details": {"error_code": code, **details}}}
    return _answer(code, body, message)


_TEAM_META = {
    "organizationId": "memhub",
    "repo": "acme/app",
    "version": 7,
    "lastModified": "2026-03-05T09:30:00.000000Z",
    "checksum": "sha256:" + "5e" * 32,
}
_RELEASE = PUT_TEAM_MEMORY.value["entries"]
TEAM_MEMORY = _answer(
    "The team memory",
    {
        **_TEAM_META,
        "content": {
            "entries": _RELEASE,
            "entryChecksums": {
                "MEMORY.md": "sha256:" + "c4" * 32,
                "project_release.md": "sha256:" + "9b" * 32,
            },
        },
    },
    "With `view=hashes`, `content` holds `entryChecksums` only",
)
TEAM_MEMORY_PUT = _answer("Written", {**_TEAM_META, "version": 8, "held": []})
TEAM_MEMORY_ERRORS = {
    400: _error("invalid_repo", "repo must be an owner/repo slug."),
    403: _error("auto_memory_off", "Team memory is turned off for acme/app."),
    404: _error("empty", "acme/app has no team memory yet."),
    412: _error("precondition_failed", "The team memory changed since your last pull."),
    413: _error("entry_too_large", "project_release.md is over 250,000 bytes."),
    422: _error(
        "team_memory_secret_detected", "project_release.md holds what looks like a secret."
    ),
}
AGENT_SNAPSHOT = _answer(
    "A snapshot waiting for review",
    {
        "project": "acme/widgets",
        "agent_type": "reviewer",
        "checkout": {"id": 3, "origin": "upload"},
        "snapshot": {"updated_at": "2026-03-05T09:30:00.000Z", "problem": None},
        "scopes": [
            {
                "scope": "user",
                "status": "initialize",
                "reason": "no local memory yet (no *.md file)",
                "updated_at": "2026-03-05T09:30:00.000Z",
                "synced_from": None,
                "review_url": "https://memhub.example.com/snapshots/3/reviewer/user/",
                "decision": {
                    "id": 12,
                    "decision": "initialize",
                    "updated_at": "2026-03-05T09:30:00.000Z",
                    "files": ["style.md"],
                    "decided_by": "ana",
                    "decided_at": "2026-03-05T10:02:11Z",
                    "applied_at": None,
                },
            }
        ],
    },
)
