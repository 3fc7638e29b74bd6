"""Finding the local agent memory directories under a memory base (docs/design.md §1, §3, §13)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from memapp.memdir.store_files import INDEX_FILENAME, TEAM_DIR

# A private store's team memory is a store of its own; its daily logs are no memories at all,
# which the file rule says for every store (docs/design.md §6a).
PRIVATE_EXCLUDE = (TEAM_DIR,)


@dataclass(frozen=True)
class FoundStore:
    """A memory directory found on disk, and what kind of store it is."""

    kind: str  # "private", "team" or "agent"
    path: Path
    project_dirname: str = ""  # the sanitized directory name under `projects/`
    mount: str = ""  # `team/<mount>/` of newer clients
    agent_type: str = ""
    exclude: tuple[str, ...] = ()  # top-level entries that are stores of their own


def _subdirs(path: Path) -> list[Path]:
    """Real (non-symlink) subdirectories, sorted; a missing or unreadable directory has none."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return []
    return sorted(
        Path(entry.path)
        for entry in entries
        if entry.is_dir(follow_symlinks=False) and not entry.name.startswith(".")
    )


def _has_topic_files(path: Path) -> bool:
    try:
        return any(
            entry.name.endswith(".md") and entry.is_file(follow_symlinks=False)
            for entry in os.scandir(path)
        )
    except OSError:
        return False


def _team_stores(team_dir: Path, project_dirname: str) -> list[FoundStore]:
    """`team/` itself, and each `team/<mount>/` that keeps an index of its own."""
    mounts = [d for d in _subdirs(team_dir) if (d / INDEX_FILENAME).is_file()]
    stores = [
        FoundStore("team", mount, project_dirname=project_dirname, mount=mount.name)
        for mount in mounts
    ]
    if not mounts or _has_topic_files(team_dir):
        exclude = tuple(mount.name for mount in mounts)
        stores.insert(0, FoundStore("team", team_dir, project_dirname, exclude=exclude))
    return stores


def discover_memory_dirs(base: Path) -> list[FoundStore]:
    """Private and team stores under `projects/*/memory/`, agent stores under `agent-memory/*/`.

    Missing directories are not errors: they simply yield nothing. Symlinked directories are
    skipped, so discovery never wanders outside the memory base.
    """
    found: list[FoundStore] = []
    for project_dir in _subdirs(base / "projects"):
        memory = project_dir / "memory"
        if not memory.is_dir() or memory.is_symlink():
            continue
        found.append(FoundStore("private", memory, project_dir.name, exclude=PRIVATE_EXCLUDE))
        team = memory / "team"
        if team.is_dir() and not team.is_symlink():
            found.extend(_team_stores(team, project_dir.name))
    for agent_dir in _subdirs(base / "agent-memory"):
        found.append(FoundStore("agent", agent_dir, agent_type=agent_dir.name))
    return found
