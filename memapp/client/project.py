"""The project an agent works in, found from a working directory by the rules of
docs/design.md §3."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memapp.memdir import (
    canonical_git_root,
    load_user_settings,
    memory_dir_for,
    repo_slug_for,
    sanitize_path,
)

__all__ = ["Project", "find_project"]


@dataclass(frozen=True)
class Project:
    memory_dir: Path  # the agent's private memory dir, as the agent computes it
    ref: str  # `owner/repo` when the repository has an origin slug, else `dirname`
    dirname: str  # the sanitized directory name of the project (`-home-ana-app`)

    def fields(self) -> dict[str, str]:
        """The project as the API's requests name it."""
        return {"project": self.ref, "project_dirname": self.dirname}


def find_project(cwd: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Project:
    """The project whose checkout contains `cwd`.

    The memory dir follows the agent's rules (override variable, user/policy
    `autoMemoryDirectory`, else `<memory base>/projects/<sanitized git root>/memory`). The
    directory name is the sanitized canonical git root (or `cwd` outside a repository): in the
    default layout that is the memory dir's parent folder, and it stays meaningful when an
    override puts the memory dir elsewhere.
    """
    path = Path(os.path.normpath(Path(cwd).absolute()))
    memory_dir = memory_dir_for(path, env=env, settings=load_user_settings(env))
    dirname = sanitize_path(str(canonical_git_root(path) or path))
    return Project(memory_dir, repo_slug_for(path) or dirname, dirname)
