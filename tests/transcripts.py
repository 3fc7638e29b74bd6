"""Claude Code transcripts as the real client writes them (JSONL, one entry per line), for tests:
user turns, assistant text, tool calls and their results, summaries and bookkeeping entries."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

VERSION = "2.1.328"


@dataclass
class Transcript:
    """Builds a session's transcript; `lines()` is the file's content, `write()` puts it on disk."""

    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    cwd: str = "/home/alice/src/widgets"
    entrypoint: str = "cli"
    entries: list[dict] = field(default_factory=list)
    clock: datetime = field(default_factory=lambda: datetime(2026, 3, 5, 10, 0, tzinfo=UTC))

    def _common(self, kind: str, **extra) -> dict:
        self.clock += timedelta(seconds=7)
        parent = next((e["uuid"] for e in reversed(self.entries) if "uuid" in e), None)
        entry = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": "main",
            "entrypoint": self.entrypoint,
            "type": kind,
            "uuid": str(uuid.uuid4()),
            "timestamp": self.clock.isoformat().replace("+00:00", "Z"),
            **extra,
        }
        self.entries.append(entry)
        return entry

    def user(self, text: str, **extra) -> dict:
        return self._common("user", message={"role": "user", "content": text}, **extra)

    def assistant(self, text: str) -> dict:
        return self._assistant([{"type": "text", "text": text}])

    def _assistant(self, content: list[dict]) -> dict:
        message = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1200, "output_tokens": 80},
        }
        return self._common("assistant", message=message, requestId="req_fake")

    def tool_use(self, name: str, tool_input: dict, text: str = "") -> str:
        """An assistant message calling a tool; returns the call's id."""
        call_id = f"toolu_{uuid.uuid4().hex[:24]}"
        content = [{"type": "text", "text": text}] if text else []
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        self._assistant(content)
        return call_id

    def tool_result(self, call_id: str, output: str, error: bool = False) -> dict:
        """The result of a call; `error`: the tool failed (Claude Code sets `is_error`)."""
        block = {"tool_use_id": call_id, "type": "tool_result", "content": output}
        if error:
            block["is_error"] = True
        return self._common(
            "user",
            message={"role": "user", "content": [block]},
            toolUseResult=f"Error: {output}"
            if error
            else {"stdout": output, "stderr": "", "interrupted": False},
        )

    def write_memory(self, path: str, content: str) -> None:
        """The agent writing a memory file itself (Write into the memory dir), and the result."""
        call = self.tool_use("Write", {"file_path": path, "content": content})
        self.tool_result(call, f"File created successfully at: {path}")

    def summary(self, text: str) -> dict:
        leaf = next(e["uuid"] for e in reversed(self.entries) if "uuid" in e)
        entry = {"type": "summary", "summary": text, "leafUuid": leaf}
        self.entries.append(entry)
        return entry

    def snapshot(self) -> dict:
        """A bookkeeping entry of a type memhub does not keep."""
        entry = {
            "type": "file-history-snapshot",
            "messageId": str(uuid.uuid4()),
            "snapshot": {"trackedFileBackups": {}, "timestamp": self.clock.isoformat()},
            "isSnapshotUpdate": False,
        }
        self.entries.append(entry)
        return entry

    def turn(self, prompt: str, answer: str = "Done.") -> None:
        self.user(prompt)
        self.assistant(answer)

    def lines(self) -> str:
        return "".join(json.dumps(e) + "\n" for e in self.entries)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.lines(), encoding="utf-8")
        return path

    def append(self, path: Path, start: int) -> None:
        """Append the entries from index `start` (the agent writing on)."""
        with path.open("a", encoding="utf-8") as handle:
            handle.write("".join(json.dumps(e) + "\n" for e in self.entries[start:]))
