"""What a sync keeps between runs on this machine, shared by both sync engines (private sync,
`memapp.client.sync`, with its pull at session start, and team sync, `memapp.client.team`).

- **The state file**: one per (server, store or repo, directory) in the config dir, so a login
  to another server or a store that was recreated starts from no shared history instead of a
  wrong one. It holds the checksum each key had at the last sync (the base, B, of the three-way
  decision) and must name the identity it was written for: a mismatch reads as no history.
- **The lock**: one run at a time per state file (`exclusive`).
- **What the server refused**: the keys a 422 (secrets) or a 400 / 413 names (`read_refusal`),
  so both engines drop them and send the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memapp.client.config import read_json, write_private
from memapp.client.http import ApiError
from memapp.memdir.store_files import checksum

try:
    import fcntl
except ImportError:  # pragma: no cover (not on Windows)
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "SECRET_CODES",
    "STATE_VERSION",
    "Refusal",
    "SyncBusy",
    "exclusive",
    "load_base",
    "local_checksum",
    "read_refusal",
    "read_state",
    "save_base",
    "state_file",
    "state_identity",
    "state_path",
    "team_state_identity",
    "team_state_path",
]

STATE_VERSION = 1


class SyncBusy(Exception):
    """Another sync of the same memory dir is running."""


# --- the decision ---------------------------------------------------------------------------


def local_checksum(path: Path) -> str | None:
    try:
        return checksum(path.read_bytes())
    except FileNotFoundError:
        return None


def state_file(state_dir: Path, identity: bytes) -> Path:
    """The state file of one identity: its name is a hash of it."""
    return state_dir / f"{hashlib.sha256(identity).hexdigest()[:24]}.json"


def state_path(state_dir: Path, server: str, store_id: int, memory_dir: Path) -> Path:
    """A private sync's state file: one per (server, store, memory dir)."""
    return state_file(state_dir, f"{server}\n{store_id}\n{memory_dir}".encode())


def team_state_path(state_dir: Path, server: str, repo: str, team_dir: Path) -> Path:
    """A team sync's state file: one per (server, repo, team dir)."""
    return state_file(state_dir, f"{server}\0{repo}\0{team_dir}".encode())


def state_identity(server: str, store_id: int, memory_dir: Path) -> dict[str, Any]:
    """What a state file must say to be this sync's: a mismatch starts from no history."""
    return {
        "version": STATE_VERSION,
        "server": server,
        "store": store_id,
        "memory_dir": str(memory_dir),
    }


def team_state_identity(server: str, repo: str, team_dir: Path) -> dict[str, Any]:
    """What a team sync's state file must say to be this sync's."""
    return {"version": STATE_VERSION, "server": server, "repo": repo, "team_dir": str(team_dir)}


def read_state(path: Path, identity: dict[str, Any]) -> dict[str, Any]:
    """The state file's contents, or {} when it is missing, unreadable or another's."""
    state = read_json(path) or {}
    if any(state.get(name) != value for name, value in identity.items()):
        return {}
    return state


def load_base(path: Path, identity: dict[str, Any]) -> dict[str, str]:
    """The checksum each key had at the last sync (B), or {} for no (or another's) history."""
    files = read_state(path, identity).get("files")
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def save_base(path: Path, identity: dict[str, Any], base: dict[str, str]) -> None:
    body = {**identity, "files": dict(sorted(base.items()))}
    write_private(path, (json.dumps(body, indent=1) + "\n").encode())


@contextlib.contextmanager
def exclusive(lock_path: Path, busy: Exception | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (created 0600), or raise `busy` at once."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy or SyncBusy(
                "another memhub-agent sync of this memory dir is running"
            ) from None
        yield
    finally:
        os.close(fd)


# --- what the server refused ----------------------------------------------------------------

SECRET_CODES = ("secret_detected", "team_memory_secret_detected")  # files API, team protocol


@dataclass(frozen=True)
class Refusal:
    """The keys of an upload a server's refusal names: by the secrets found in them (each hit
    by key, rule and line), or the one key whose entry it refused (`key`)."""

    secrets: list[dict[str, Any]] = field(default_factory=list)
    key: str | None = None

    @property
    def keys(self) -> set[str]:
        named = {hit["key"] for hit in self.secrets}
        return named | {self.key} if self.key is not None else named


def read_refusal(exc: ApiError, pending: Collection[str]) -> Refusal:
    """What a 422 (secrets) or a 400 / 413 naming one key says about the keys in `pending`;
    an empty `Refusal` when it names none of them (the caller then raises `exc`)."""
    if exc.status == 422 and exc.code in SECRET_CODES:
        entries = exc.details.get("entries", [])
        return Refusal(secrets=[e for e in entries if e.get("key") in pending])
    key = exc.details.get("key")
    if exc.status in (400, 413) and key in pending:
        return Refusal(key=key)
    return Refusal()
