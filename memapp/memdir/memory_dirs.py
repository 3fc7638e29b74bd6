"""Finding the local agent memory directories under a memory base (docs/design.md §1, §3, §13)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memapp.memdir.paths import sanitize_path
from memapp.memdir.store_files import INDEX_FILENAME, TEAM_DIR

__all__ = [
    "CODEX_MEMORIES",
    "GEMINI_EXCLUDE",
    "PRIVATE_EXCLUDE",
    "FoundStore",
    "codex_home",
    "discover_codex_dirs",
    "discover_gemini_dirs",
    "discover_memory_dirs",
    "gemini_home",
]

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


# What Gemini CLI keeps beside its notes in a project's memory dir: drafted skills (its
# `/memory inbox` patches are under `.inbox/`, hidden like every dot entry).
GEMINI_EXCLUDE = ("skills",)


def gemini_home(env: Mapping[str, str] | None = None) -> Path:
    """`~/.gemini` (`$GEMINI_CLI_HOME/.gemini` when that is set), as Gemini CLI finds it."""
    environ = os.environ if env is None else env
    return Path(environ.get("GEMINI_CLI_HOME") or environ.get("HOME") or Path.home()) / ".gemini"


# Codex CLI's own memories: generated state, mirrored read-only (docs/design.md §28). The type
# holds a `:`, which no Claude Code sub-agent's directory can (`agent_memory_dir`).
CODEX_MEMORIES = "codex:memories"
# Beside the memory files in Codex's memories dir: skills it drafted and imported extensions.
CODEX_EXCLUDE = ("skills", "extensions")


def codex_home(env: Mapping[str, str] | None = None) -> Path:
    """`$CODEX_HOME`, else `~/.codex`, as Codex CLI finds it."""
    environ = os.environ if env is None else env
    if environ.get("CODEX_HOME"):
        return Path(environ["CODEX_HOME"])
    return Path(environ.get("HOME") or Path.home()) / ".codex"


def discover_codex_dirs(codex: Path) -> list[FoundStore]:
    """Codex CLI's memories dir, `<codex home>/memories/` (`MEMORY.md`, `memory_summary.md`,
    `raw_memories.md`, `rollout_summaries/`): one for the person across every project, so an
    agent store of user scope, read-only."""
    memory = codex / "memories"
    if not memory.is_dir() or memory.is_symlink():
        return []
    return [FoundStore("agent", memory, agent_type=CODEX_MEMORIES, exclude=CODEX_EXCLUDE)]


def discover_gemini_dirs(gemini: Path) -> list[FoundStore]:
    """Gemini CLI's memory dirs, `tmp/<project id>/memory/` (docs/design.md §28), as private
    stores of the project whose folder the id stands for (`projects.json`, else the id's
    `.project_root` file), named as Claude Code names that folder so both agents' memories
    belong to one project."""
    roots: dict[str, str] = {}
    try:
        projects = json.loads((gemini / "projects.json").read_text(encoding="utf-8"))["projects"]
        roots = {v: k for k, v in projects.items() if isinstance(k, str) and isinstance(v, str)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    found = []
    for folder in _subdirs(gemini / "tmp"):
        memory = folder / "memory"
        if not memory.is_dir() or memory.is_symlink():
            continue
        root = roots.get(folder.name)
        if root is None:
            try:
                root = (folder / ".project_root").read_text(encoding="utf-8").strip()
            except OSError:
                continue
        if not root.startswith("/"):
            continue
        found.append(
            FoundStore(
                "private",
                memory,
                sanitize_path(root),
                agent_type="gemini-cli",
                exclude=GEMINI_EXCLUDE,
            )
        )
    return found
