"""SessionStart: make the memory dir, pull the server's changes into it, and add only what
Claude Code does not give the agent itself (docs/design.md §16).

Claude Code writes its own memory section into the system prompt and loads `MEMORY.md` from the
memory dir before this hook runs, so the hook adds, for that client, only:

- the index as it is *now*, when the pull just changed it (the copy the client loaded is stale);
- the team index, when the client has no team memory of its own;
- one line saying what waits for the person's review in memhub;
- when the session resumes or was compacted (`source` `resume` or `compact`), its summary so
  far (docs/design.md §14.10).

All of it comes from one request; when the server is slow or down, nothing is written and
nothing is said.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from memapp.client.config import config_dir
from memapp.client.hooks import HookCall
from memapp.client.pull import pull_changes
from memapp.client.sync import scan_local
from memapp.memdir.store_files import INDEX_FILENAME

__all__ = ["has_own_team_memory", "session_start"]

# What Claude Code's own team memory sync keeps in each team folder it manages.
TEAM_SYNC_MANIFEST = ".memory-sync"


def has_own_team_memory(memory_dir: Path) -> bool:
    """Whether the agent syncs team memory itself: its team sync has left its manifest in
    `<memory dir>/team/` or in a mount folder under it. Then it loads that index itself."""
    team = memory_dir / "team"
    if (team / TEAM_SYNC_MANIFEST).is_file():
        return True
    with contextlib.suppress(OSError):
        return any((mount / TEAM_SYNC_MANIFEST).is_file() for mount in team.iterdir())
    return False


def _fresh_index(memory_dir: Path) -> str:
    """The private index as it is on disk now, cut as the client cuts it."""
    from memapp.memdir.index import load_index  # YAML and the scanner: only when needed

    cut = load_index(memory_dir)
    path = memory_dir / INDEX_FILENAME
    if not cut.content:
        return f"{path} was emptied in memhub since this session loaded it."
    return (
        f"Contents of {path} (changed in memhub since this session loaded it; read this "
        f"instead of the earlier copy):\n\n{cut.content}"
    )


def session_start(call: HookCall) -> str:
    memory_dir = call.project.memory_dir
    try:
        memory_dir.mkdir(parents=True, exist_ok=True)  # the prompt says it already exists
    except OSError:
        # Read-only or not ours: no pull then, but the team index and notices still come.
        usable = False
    else:
        usable = True
    scanned: tuple[dict[str, str], set[str]] = scan_local(memory_dir) if usable else ({}, set())
    # Only Claude Code syncs team memory itself; other agents get the team index from memhub.
    own_team = usable and call.agent == "claude-code" and has_own_team_memory(memory_dir)
    answer = call.client().post(
        "/api/v1/session-start",
        {
            **call.project.fields(),
            "memory_dir": str(memory_dir),
            "have": scanned[0],
            "team_index": not own_team,
            "session_id": (call.session_id or "")[:200],
            "source": str(call.payload.get("source") or "")[:40],
        },
    )
    parts = []
    store = answer.get("store")
    if isinstance(store, int) and usable:
        pulled = pull_changes(
            call.config.url,
            store,
            memory_dir,
            config_dir(call.env) / "sync",
            answer.get("checksums") or {},
            answer.get("files") or {},
            mtimes=answer.get("mtimes") or {},
            scanned=scanned,
            writing=call.writing,
            time_left=call.remaining,
        )
        if INDEX_FILENAME in pulled:
            parts.append(_fresh_index(memory_dir))
    for name in ("session_summary", "team_index", "notice"):
        text = answer.get(name)
        if isinstance(text, str) and text.strip():
            parts.append(text.strip())
    return "\n\n".join(parts)
