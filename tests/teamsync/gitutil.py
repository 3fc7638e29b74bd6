"""Real git for the team sync tests: bare remotes, clones, and what the shared repository holds."""

from __future__ import annotations

import subprocess
from pathlib import Path

from teamsync.engine import StoreSpec, TeamClone

MARKERS = ("<<<<<<<", ">>>>>>>", "|||||||")


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd`; its stdout (raises on failure)."""
    result = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    )
    return result.stdout


def make_bare(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--bare", "--quiet", "--initial-branch=main")
    return path


def history(bare: Path) -> str:
    """Everything the shared repository has ever held: every commit's patch, on every ref."""
    if not git(bare, "for-each-ref"):
        return ""
    return git(bare, "log", "-p", "--all", "--full-history", "--binary", "--format=%H %an %s")


def tip_files(bare: Path, folder: str) -> dict[str, str]:
    """`key -> text` of the folder at the tip of `main` in the shared repository."""
    listing = git(bare, "ls-tree", "-r", "--name-only", "main", "--", folder).splitlines()
    return {
        path.removeprefix(folder + "/"): git(bare, "show", f"main:{path}")
        for path in listing
        if path.endswith(".md")
    }


def commit_count(repo: Path, ref: str = "main") -> int:
    return int(git(repo, "rev-list", "--count", ref).strip())


def authors(repo: Path, ref: str = "HEAD") -> list[str]:
    return git(repo, "log", "--format=%an", ref).splitlines()


def memory(name: str, body: str, type_: str = "project") -> str:
    return f"---\nname: {name}\ndescription: {name} in one line\ntype: {type_}\n---\n{body}"


def _no_secrets(files):
    return {}


class Member:
    """One member's memhub, reduced to the engine: a clone, a team store and its base."""

    def __init__(self, root: Path, name: str, remote: Path, folder: str = "acme/app") -> None:
        self.name = name
        self.folder = folder
        self.clone = TeamClone(root / name / "clone", str(remote))
        self.store = root / name / "store"
        self.store.mkdir(parents=True)
        self.base: dict[str, str] = {}
        self.held: set[str] = set()
        self.conflicts = []

    @property
    def spec(self) -> StoreSpec:
        return StoreSpec(self.folder, self.store, dict(self.base), held=frozenset(self.held))

    def write(self, key: str, text: str) -> None:
        path = self.store / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def read(self, key: str) -> str | None:
        path = self.store / key
        return path.read_text(encoding="utf-8") if path.exists() else None

    def delete(self, key: str) -> None:
        (self.store / key).unlink()

    def commit(self, **limits):
        with self.clone.locked():
            self.clone.ensure()
            result = self.clone.commit_local(
                self.spec,
                (self.name, f"{self.name}@example.com"),
                secret_check=_no_secrets,
                max_entries=limits.get("max_entries", 500),
                max_entry_bytes=limits.get("max_entry_bytes", 250_000),
            )
        self.base = result.base
        return result

    def pull(self):
        """Fetch, merge, hold what conflicted, bring the store up to date."""
        with self.clone.locked():
            self.clone.ensure()
            assert self.clone.fetch() is None
            merged = self.clone.integrate()
            assert merged.error is None
            for conflict in merged.conflicts:
                self.conflicts.append(conflict)
                self.held.add(conflict.path.removeprefix(self.folder + "/"))
            applied = self.clone.apply_incoming(self.spec)
        self.base = applied.base
        return merged, applied

    def push(self) -> tuple[bool, str | None, bool]:
        with self.clone.locked():
            return self.clone.push_once()

    def sync(self):
        """What the service does: commit, integrate, push (integrating again on a rejection)."""
        self.commit()
        merged, applied = self.pull()
        for _ in range(3):
            ok, error, permanent = self.push()
            if ok:
                return merged, applied
            assert not permanent, error
            self.pull()
        raise AssertionError("push kept being rejected")
