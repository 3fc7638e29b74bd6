"""A second memhub on "another machine": manage.py run as subprocesses with a data dir, a
Claude config dir and a database of its own, sharing only the team remote with the test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.migrated import migrate

MANAGE = Path(__file__).resolve().parents[2] / "manage.py"


class Instance:
    def __init__(self, data_dir: Path, claude_dir: Path, remote: Path, admin: str) -> None:
        self.data_dir, self.claude_dir, self.remote, self.admin = (
            data_dir,
            claude_dir,
            remote,
            admin,
        )
        data_dir.mkdir(parents=True, exist_ok=True)
        claude_dir.mkdir(parents=True, exist_ok=True)

    @property
    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
        return {
            **keep,
            "MEMHUB_DATA_DIR": str(self.data_dir),
            "MEMHUB_TEAM_REMOTE": str(self.remote),
            "MEMHUB_DISCOVER": "1",
            "MEMHUB_ADMIN_PASSWORD": "another machine's admin",
            "CLAUDE_CONFIG_DIR": str(self.claude_dir),
            "DJANGO_SETTINGS_MODULE": "memapp.settings",
        }

    def popen(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start `manage.py <args>` in a session of its own (so its git children can be killed
        with it); `env` adds to its environment."""
        return subprocess.Popen(
            [sys.executable, str(MANAGE), *args],
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [sys.executable, str(MANAGE), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} failed ({result.returncode}):\n"
                f"{result.stdout}\n{result.stderr}"
            )
        return result

    def start(self) -> None:
        """First start, as the README's run command does: database, admin, discovery."""
        migrate(self.data_dir)
        self.run("ensure_admin", "--username", self.admin)
        self.run("discover")

    def team_dir(self, project_dir: str) -> Path:
        return self.claude_dir / "projects" / project_dir / "memory" / "team"
