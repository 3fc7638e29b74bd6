"""PostToolUse: when the agent reads a memory file itself, the freshness note it would get had
the memory been recalled, and the file counted as shown to the session, so recall does not
offer it again (docs/design.md §8, §16).

Only `Read` of a topic file (`*.md` other than `MEMORY.md`) under one of the project's memory
directories counts. The note is worked out here, from the file's age; the server is told of the
read in the same breath, and a server that is slow or down costs the note nothing. A `Grep`
whose results name such files gets the note for each stale one, by its path (a Grep shows
parts of them, not the whole: they are not counted as shown).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from memapp.client.hooks import HookCall
from memapp.memdir.freshness import staleness_note

__all__ = ["after_read", "memory_file_read", "memory_files_grepped"]

MAX_GREP_NOTES = 20

INDEX_FILENAME = "MEMORY.md"


def _memory_file(call: HookCall, file_path: object) -> Path | None:
    if not isinstance(file_path, str) or not Path(file_path).is_absolute():
        return None
    path = Path(os.path.normpath(file_path))
    if path.suffix != ".md" or path.name == INDEX_FILENAME:
        return None
    if not any(path.is_relative_to(root) for root in call.project.memory_roots()):
        return None
    return path


def memory_file_read(call: HookCall) -> Path | None:
    """The memory topic file a `Read` call read, or None for any other tool call or file."""
    if call.payload.get("tool_name") != "Read":
        return None
    tool_input = call.payload.get("tool_input")
    return _memory_file(call, tool_input.get("file_path") if isinstance(tool_input, dict) else None)


def memory_files_grepped(call: HookCall) -> list[Path]:
    """The memory topic files a `Grep` call's results name (its `filenames`, or the paths
    that start its `content` lines), each once, in order."""
    if call.payload.get("tool_name") != "Grep":
        return []
    response = call.payload.get("tool_response")
    if not isinstance(response, dict):
        return []
    names = response.get("filenames")
    found = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    content = response.get("content")
    if isinstance(content, str):
        found += [line.split(":", 1)[0] for line in content.splitlines() if ":" in line]
    paths = [_memory_file(call, name) for name in dict.fromkeys(found)]
    return [path for path in paths if path is not None]


def _grep_notes(call: HookCall) -> str:
    notes = []
    for path in memory_files_grepped(call)[:MAX_GREP_NOTES]:
        try:
            note = staleness_note(path.stat().st_mtime_ns // 1_000_000)
        except OSError:
            continue
        if note:
            notes.append(f"{path}: {note}")
    return "\n".join(notes)


def after_read(call: HookCall) -> str:
    path = memory_file_read(call)
    if path is None:
        return _grep_notes(call)
    try:
        mtime_ms = path.stat().st_mtime_ns // 1_000_000
    except OSError:
        return ""
    if call.session_id:
        with contextlib.suppress(Exception):  # the note does not depend on the server
            call.client().post(
                "/api/v1/recall/surfaced", {"session_id": call.session_id, "paths": [str(path)]}
            )
    return staleness_note(mtime_ms)
