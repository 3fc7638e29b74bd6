"""The project an agent works in, found from a working directory by the rules of
docs/design.md §3, §13."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from memapp.memdir.paths import (
    AgentScope,
    agent_memory_dir,
    canonical_git_root,
    checkout_root,
    load_user_settings,
    memory_base,
    memory_dir_for,
    repo_slug_for,
    sanitize_path,
)
from memapp.memdir.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AGENT_SCOPES", "Project", "find_project"]

AGENT_SCOPES: tuple[AgentScope, ...] = ("local", "project", "user")  # the narrowest first


class Project(Record):  # not a dataclass: every hook loads this, and dataclasses is slow
    memory_dir: Path  # the agent's private memory dir, as the agent computes it
    ref: str  # `owner/repo` when the repository has an origin slug, else `dirname`
    dirname: str  # the sanitized directory name of the project (`-home-ana-app`)
    checkout: Path  # the top of the checkout (or the directory itself outside one)
    env: Mapping[str, str] | None = None  # the environment it was found in (None: os.environ)

    def fields(self) -> dict[str, str]:
        """The project as the API's requests name it."""
        return {"project": self.ref, "project_dirname": self.dirname}

    def agent_dir(self, agent_type: str, scope: AgentScope) -> Path:
        """Where the agent keeps its memory of `scope` for this project (docs/design.md §13)."""
        return agent_memory_dir(agent_type, scope, env=self.env, repo=self.checkout)

    def agent_scope(self, agent_type: str) -> AgentScope | None:
        """The scope of the agent's memory here: the narrowest whose directory exists, or None
        when the agent keeps none (or its type is no safe directory name)."""
        for scope in AGENT_SCOPES:
            try:
                if self.agent_dir(agent_type, scope).is_dir():
                    return scope
            except (ValueError, OSError):
                return None
        return None

    def memory_roots(self) -> list[Path]:
        """Every directory holding memory of this project's agent: the private memory dir
        (its `team/` included) and the agent memory folders of every scope."""
        return [
            self.memory_dir,
            memory_base(self.env) / "agent-memory",
            self.checkout / ".claude" / "agent-memory",
            self.checkout / ".claude" / "agent-memory-local",
        ]


def find_project(
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Project:
    """The project whose checkout contains `cwd`.

    The memory dir follows the agent's rules (override variable, `autoMemoryDirectory` from the
    settings a person controls, else `<memory base>/projects/<sanitized git root>/memory`);
    `settings` default to those of `cwd`'s checkout (`load_user_settings`). The directory name
    is the sanitized canonical git root (or `cwd` outside a repository): in the default layout
    that is the memory dir's parent folder, and it stays meaningful when an override puts the
    memory dir elsewhere.
    """
    path = Path(os.path.normpath(Path(cwd).absolute()))
    if settings is None:
        settings = load_user_settings(env, project_dir=path)
    memory_dir = memory_dir_for(path, env=env, settings=settings)
    dirname = sanitize_path(str(canonical_git_root(path) or path))
    checkout = checkout_root(path) or path
    return Project(memory_dir, repo_slug_for(path) or dirname, dirname, checkout, env)
