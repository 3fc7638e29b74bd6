"""The git side of team sync, with no Django: one clone of the shared repository (without a work
tree: see `TeamClone`), and the three-way exchange between a team store directory and its folder
in that clone.

Each team store maps to a folder of the shared repository (`owner/repo/`, docs/design.md §17). The
*base* of a store is the checksum of each key as it was last synced (kept by the caller). From
it each side's changes are known:

- a key whose store checksum differs from its base changed locally: it is committed (after the
  secret filter and the caps) with the author of the change;
- a key whose clone checksum differs from its base after integrating the remote changed
  remotely: it is written to the store.

Integration is `git merge-tree` of the remote branch, so git does the three-way merge of commits.
Overlapping edits are not resolved by guessing: the shared repository keeps the remote version
(never conflict markers), the local version stays in the store, and the conflict is returned
for a person to resolve. `MEMORY.md` is merged line by line (`merge_index`, the rule proposals
use: an entry is the file it links, nothing either side added is lost, a line either side
removed goes) and then cleaned of entries whose file is gone; git's union driver only keeps the
merge itself from stopping on it. All git work runs through the git command, under one
lock per clone that a crashed process cannot leave held (an `flock` dies with its holder).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from git import GitCommandError, Repo

from memapp.memdir.atomic import delete_file, write_atomic_files
from memapp.memdir.filelock import file_lock
from memapp.memdir.index import merge_index, parse_index_entries, without_entries_of
from memapp.memdir.keys import PathTraversalError, check_key
from memapp.memdir.store_files import (
    INDEX_FILENAME,
    FileRejected,
    check_entry,
    checksum,
    entry_paths,
    is_index_key,
    is_store_key,
    read_file,
    read_store,
    store_checksums,
)

BRANCH = "main"
GITATTRIBUTES = (
    "# MEMORY.md is never text-merged: both sides' entries are kept.\n**/MEMORY.md merge=union\n"
)
MAX_PUSH_ATTEMPTS = 3

# Failures that will not pass by themselves: retrying only hammers the remote (docs/design.md §17).
# HTTP statuses only as git reports them: a bare "401" also matches a path or a port.
_PERMANENT = re.compile(
    r"authentication failed|permission denied|could not read username|repository not found"
    r"|does not appear to be a git repository|not found|access denied|returned error: 40[134]"
    r"|no such file or directory|could not resolve host|hook declined|protected branch",
    re.IGNORECASE,
)
# Someone pushed first: fetch, integrate and push again. Checked before _PERMANENT, whose
# words may appear in the remote's URL, which git repeats in its message.
_REJECTED = re.compile(r"\[rejected\]|\(fetch first\)|\(non-fast-forward\)", re.IGNORECASE)

# (key -> list of hits) for the keys that must not be committed; hits are opaque to the engine.
SecretCheck = Callable[[Mapping[str, str]], Mapping[str, list]]


def is_permanent(error: str) -> bool:
    """Whether a git error will not pass by itself (a push rejected because someone pushed
    first will: fetch, integrate, push again)."""
    return not _REJECTED.search(error) and bool(_PERMANENT.search(error))


@dataclass(frozen=True)
class StoreSpec:
    """A team store as the engine sees it."""

    folder: str  # repository-relative folder, e.g. "acme/app"
    directory: Path
    base: Mapping[str, str]  # key -> checksum as last synced
    exclude: tuple[str, ...] = ()  # top-level entries of the directory that are not this store
    held: frozenset[str] = frozenset()  # keys with an open conflict: left alone until resolved


@dataclass(frozen=True)
class Conflict:
    """Both sides changed one file and the changes overlap (or one side deleted it)."""

    path: str  # repository-relative
    kind: str  # "edit" (both edited) or "edit_delete"
    base: str | None
    ours: str | None
    theirs: str | None


@dataclass
class CommitResult:
    committed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    blocked: dict[str, list] = field(default_factory=dict)  # secrets, too large or invalid
    too_large: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)  # not UTF-8 text, or holding NUL
    capped: list[str] = field(default_factory=list)  # new keys refused over the entry cap
    conflicts: list[Conflict] = field(default_factory=list)  # changed here and in the clone
    total_entries: int = 0
    base: dict[str, str] = field(default_factory=dict)
    commit: str | None = None


@dataclass
class IntegrateResult:
    conflicts: list[Conflict] = field(default_factory=list)
    merged: bool = False  # the remote had commits we did not
    before: str | None = None  # the clone's commit before the merge
    error: str | None = None


@dataclass
class IncomingResult:
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    not_applied: list[str] = field(default_factory=list)  # store changed meanwhile: next sync
    base: dict[str, str] = field(default_factory=dict)
    contents: dict[str, bytes] = field(default_factory=dict)  # what was written, by key
    stats: dict[str, os.stat_result] = field(default_factory=dict)  # as each write left it


# git blob id -> checksum of its content: content-addressed, so never stale. A pull reads from
# git's objects only the blobs it has not seen (the ones a teammate changed).
_blob_checksums: dict[str, str] = {}
MAX_REMEMBERED_BLOBS = 200_000


def _entry_files(key: str, text: str) -> list[tuple[int, str]]:
    """Each entry of the index `key` (its `text`) that links a file: its line number and the
    file's key (the link taken from beside `key`)."""
    folder = posixpath.dirname(key)
    return [
        (entry.line_number, posixpath.normpath(posixpath.join(folder, entry.path)))
        for entry in parse_index_entries(text)
        if entry.path
    ]


def _entries_outside(key: str, text: str, in_repo: set[str]) -> set[int]:
    """Line numbers of the index `key`'s entries whose file is not in the shared repository
    (`in_repo`: its keys): files kept back for a secret, their size or the entry cap, held
    by a conflict, or never written."""
    return {number for number, file in _entry_files(key, text) if file not in in_repo}


def shared_index(key: str, data: bytes, in_repo: set[str]) -> bytes:
    """The index as the shared repository gets it: only entries of files it has, so no
    teammate gets an entry for a file they cannot open."""
    text = data.decode("utf-8", "replace")
    drop = _entries_outside(key, text, in_repo)
    if not drop:
        return data
    lines = text.split("\n")
    return "\n".join(line for n, line in enumerate(lines, 1) if n not in drop).encode("utf-8")


def with_local_entries(
    key: str, incoming: bytes | None, data: bytes | None, in_repo: set[str]
) -> bytes | None:
    """An index arriving from the shared repository (None: deleted there), with the store's
    own entries of files outside the repository (`data`: the store's index) kept at its end."""
    if data is None:
        return incoming
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    present = set((incoming or b"").decode("utf-8", "replace").split("\n"))
    extra = [
        lines[n - 1]
        for n in sorted(_entries_outside(key, text, in_repo))
        if lines[n - 1] not in present
    ]
    if not extra:
        return incoming
    head = incoming or b""
    head = head if not head or head.endswith(b"\n") else head + b"\n"
    return head + "\n".join(extra).encode("utf-8") + b"\n"


def _linked(key: str, data: bytes) -> set[str]:
    """The files the entries of index `key` link, as paths beside `key`."""
    return {file for _, file in _entry_files(key, data.decode("utf-8", "replace"))}


def without_entries(key: str, data: bytes, paths: Collection[str]) -> bytes:
    """Index `key` without its entries of `paths` (paths beside `key`); every other byte kept."""
    folder = posixpath.dirname(key)
    text = without_entries_of(
        data.decode("utf-8", "surrogateescape"),
        lambda path: posixpath.normpath(posixpath.join(folder, path)) in paths,
    )
    return text.encode("utf-8", "surrogateescape")


def keep_entries(key: str, data: bytes, shared: bytes, paths: Collection[str]) -> bytes:
    """Index `key` as it is to be committed (`data`) with the entries of `paths` that the
    repository's version (`shared`) has and it lacks, each after the line it follows there."""
    missing = (_linked(key, shared) & set(paths)) - _linked(key, data)
    if not missing:
        return data
    return _merge_indexes(without_entries(key, shared, missing), shared, data)


def _merge_indexes(base: bytes | None, ours: bytes, theirs: bytes) -> bytes:
    """Two changed versions of one index merged line by line (docs/design.md §5)."""
    texts = [(v or b"").decode("utf-8", "surrogateescape") for v in (base, ours, theirs)]
    return merge_index(*texts).encode("utf-8", "surrogateescape")


def _show(repo: Repo, spec: str) -> bytes | None:
    """A file of a commit (`rev:path`) as bytes; None when it has none."""
    try:
        return repo.git.show(spec, stdout_as_string=False, strip_newline_in_stdout=False)
    except GitCommandError:
        return None


def union_lines(first: bytes, second: bytes) -> bytes:
    """`first`, then every non-blank line of `second` it lacks: how two indexes of one folder
    are joined when neither may lose an entry."""
    lines = first.decode("utf-8", "replace").splitlines()
    for line in second.decode("utf-8", "replace").splitlines():
        if line.strip() and line not in lines:
            lines.append(line)
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _read_store_file(directory: Path, key: str) -> bytes | None:
    try:
        return read_file(directory / key)
    except OSError:
        return None


@dataclass(frozen=True)
class Blob:
    """A file already in git's objects: what a commit puts at a path without reading it."""

    mode: str
    sha: str


FILE_MODE = "100644"  # what a file memhub writes is, to git

# What a commit does to a path: new content, a blob git has, or None to delete it.
Change = bytes | Blob | None


def blob_id(data: bytes) -> str:
    """The id git gives a blob of `data` (its object format is SHA-1)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _fast_import_path(path: str) -> bytes:
    """A path as `git fast-import` reads it: C-style quoted when it must be, its bytes as git
    listed them (a name that is not UTF-8 comes back as it went in)."""
    if path.startswith('"') or "\n" in path:
        quoted = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        path = f'"{quoted}"'
    return path.encode("utf-8", "surrogateescape")


def _ident(name: str, email: str, date: str) -> bytes:
    """An author or committer line's person and date for `git fast-import`."""
    name, email = (re.sub(r"[<>\n]", "", part) for part in (name, email))
    return f"{name} <{email}> {date}".encode()


class TeamClone:
    """memhub's one clone of the shared team repository, without a work tree.

    Its git directory is `clone_dir/.git` (`core.bare`): commits are written from git's objects
    (`git fast-import`), merges made by `git merge-tree`, and files read with `git cat-file`,
    so a pull writes each changed file once, into the store, and never checks it out into a
    second copy (docs/design.md §17). A clone from before kept a checked-out work tree: `ensure`
    drops it, the history untouched."""

    def __init__(self, clone_dir: Path, remote: str, *, author=("memhub", "memhub@localhost")):
        self.clone_dir = Path(clone_dir)
        self.git_dir = self.clone_dir / ".git"
        self.remote = remote
        self.default_author = author
        self._fetching: subprocess.Popen[bytes] | None = None  # see `fetching`

    # -- setup and locking ---------------------------------------------------------------------

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """One git operation at a time on this clone, across processes."""
        return file_lock(f"{self.clone_dir}.lock")

    @contextlib.contextmanager
    def repo(self) -> Iterator[Repo]:
        with Repo(self.git_dir) as repo:
            yield repo

    def _git(self, *args: str, input: bytes | None = None, ok: Collection[int] = (0,)) -> bytes:
        """Run git on the clone's git directory; its stdout (GitCommandError on another exit
        status than `ok`)."""
        done = subprocess.run(["git", *args], cwd=self.git_dir, input=input, capture_output=True)
        if done.returncode not in ok:
            raise GitCommandError(["git", *args], done.returncode, done.stderr)
        return done.stdout

    def ensure(self, *, fetch: bool = True) -> None:
        """Clone the remote (or start it, when it is empty).

        `fetch=False` never touches the network (a web request committing a change): a new
        clone then starts a history of its own, which the next sync merges with the remote's.

        Nothing a killed process leaves is half done: a commit or a merge exists once its
        branch moved to it, and the store still holds what was being written.
        """
        if not self.git_dir.is_dir():
            self.clone_dir.mkdir(parents=True, exist_ok=True)
            Repo.init(self.git_dir, bare=True, initial_branch=BRANCH).close()
            with self.repo() as repo:
                repo.git.remote("add", "origin", self.remote)
                self._configure(repo)
        elif self._git("config", "--bool", "core.bare", ok=(0, 1)).strip() != b"true":
            self._drop_work_tree()
        self._remove_stale_git_locks()
        attributes = self.git_dir / "info" / "attributes"
        if not attributes.is_file() or attributes.read_text() != GITATTRIBUTES:
            # Read by `git merge-tree` (a repository without a work tree reads no
            # .gitattributes): the union driver keeps a merge from stopping on an index.
            attributes.parent.mkdir(exist_ok=True)
            attributes.write_text(GITATTRIBUTES)
        with self.repo() as repo:
            if repo.git.remote("get-url", "origin") != self.remote:
                repo.git.remote("set-url", "origin", self.remote)
            if not repo.head.is_valid():
                self._first_commit(repo, fetch=fetch)

    def _drop_work_tree(self) -> None:
        """A clone made before memhub kept none: remove its checked-out files, its index and a
        merge a killed process left, then mark it bare. Every change memhub makes was committed
        at once, so only what a crash left half-written goes (the store still holds it)."""
        for name in ("MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "AUTO_MERGE", "index"):
            (self.git_dir / name).unlink(missing_ok=True)
        for entry in self.clone_dir.iterdir():
            if entry.name == ".git":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        self._git("config", "core.bare", "true")  # last: a crash before it migrates again

    def _remove_stale_git_locks(self) -> None:
        """Drop the `*.lock` files a git killed mid-command leaves (a branch's lock, the
        config's): only memhub works in this clone, and it holds `locked()`, so none is live."""
        for lock in [*self.git_dir.glob("*.lock"), *(self.git_dir / "refs").rglob("*.lock")]:
            lock.unlink(missing_ok=True)

    def _configure(self, repo: Repo) -> None:
        with repo.config_writer() as config:
            config.set_value("user", "name", self.default_author[0])
            config.set_value("user", "email", self.default_author[1])

    def _first_commit(self, repo: Repo, *, fetch: bool) -> None:
        """Adopt the remote's history when it has one, else start it with .gitattributes."""
        try:
            if fetch:
                repo.git.fetch("origin", BRANCH)
                repo.git.update_ref(f"refs/heads/{BRANCH}", f"origin/{BRANCH}")
                return
        except GitCommandError:
            pass
        self.commit_files(
            {".gitattributes": GITATTRIBUTES.encode()}, "Start the team memory repository"
        )

    def head(self) -> str | None:
        """The commit the clone's branch is at; None before its first."""
        out = self._git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=(0, 1))
        return out.decode().strip() or None

    def _entries(self, ref: str) -> dict[str, Blob]:
        """Every file of commit `ref` with its mode and blob id, by path (one `git ls-tree -z`:
        a path may hold any byte but NUL, a line break or invalid UTF-8 among them)."""
        out = self._git("ls-tree", "-r", "-z", "--full-tree", ref)
        entries = {}
        for item in out.split(b"\0"):
            meta, _, path = item.partition(b"\t")
            mode, _, rest = meta.decode().partition(" ")
            _kind, _, sha = rest.partition(" ")
            if sha:
                entries[path.decode("utf-8", "surrogateescape")] = Blob(mode, sha)
        return entries

    def commit_files(
        self,
        changes: Mapping[str, Change],
        message: str,
        author: tuple[str, str] | None = None,
        *,
        merge: str | None = None,
    ) -> str | None:
        """One commit on the clone's branch of `changes` (repository path -> content, a blob,
        or None to delete), written into git's objects by `git fast-import`; `merge`: the
        second parent. Changes that change nothing are left out, and without any (and no
        `merge`) nothing is committed: returns the new commit, or None."""
        parent = self.head()
        if parent is not None:
            current = self._entries(parent)
            changes = {
                path: change
                for path, change in changes.items()
                if (Blob(FILE_MODE, blob_id(change)) if isinstance(change, bytes) else change)
                != current.get(path)
            }
        if not changes and merge is None:
            return None
        name, email = author or self.default_author
        body = message.encode("utf-8")
        authored, committed = self._dates()
        stream = [
            f"commit refs/heads/{BRANCH}\n".encode(),
            b"author " + _ident(name, email, authored) + b"\n",
            b"committer " + _ident(*self.default_author, committed) + b"\n",
            b"data %d\n" % len(body),
            body + b"\n",
        ]
        if parent is not None:
            stream.append(f"from {parent}\n".encode())
        if merge is not None:
            stream.append(f"merge {merge}\n".encode())
        for path, change in sorted(changes.items()):
            quoted = _fast_import_path(path)
            if change is None:
                stream.append(b"D " + quoted + b"\n")
            elif isinstance(change, Blob):
                stream.append(f"M {change.mode} {change.sha} ".encode() + quoted + b"\n")
            else:
                stream.append(f"M {FILE_MODE} inline ".encode() + quoted + b"\n")
                stream += [b"data %d\n" % len(change), change, b"\n"]
        stream.append(b"\ndone\n")
        self._git("fast-import", "--quiet", "--done", "--date-format=raw", input=b"".join(stream))
        return self.head()

    def _dates(self) -> tuple[str, str]:
        """The author and committer dates `git commit` would give (raw): now, unless
        GIT_AUTHOR_DATE or GIT_COMMITTER_DATE say otherwise."""
        if "GIT_AUTHOR_DATE" not in os.environ and "GIT_COMMITTER_DATE" not in os.environ:
            now = f"{int(time.time())} +0000"
            return now, now
        idents = [
            self._git("var", var).decode() for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
        ]
        authored, committed = (" ".join(ident.split()[-2:]) for ident in idents)
        return authored, committed

    # -- local changes ---------------------------------------------------------------------------

    def commit_local(
        self,
        spec: StoreSpec,
        author: tuple[str, str] | None = None,
        *,
        secret_check: SecretCheck,
        max_entries: int,
        max_entry_bytes: int,
        keys: set[str] | None = None,
        message: str | None = None,
    ) -> CommitResult:
        """Commit the store's changes since its base (all keys, or just `keys`).

        Files with a secret, over `max_entry_bytes` or not text (the entry checks of
        docs/design.md §6a) are not committed (returned as blocked);
        new files beyond `max_entries` are refused (returned as capped) while changes to
        existing ones still go. A key that also changed in the clone since the base (a merged
        remote change the store has not received yet) is merged three-way with it, never
        written over it; overlapping edits come back as conflicts, nothing committed for them.
        """
        result = CommitResult(base=dict(spec.base))
        # Compared by checksums (the store's re-read only where a stat changed, the clone's
        # from blob ids already seen): only the files that changed are read.
        sums = store_checksums(spec.directory, spec.exclude)
        blobs = self.tree_blobs(spec.folder)
        clone = self._checksums(blobs)
        changes: dict[str, Change] = {}
        candidates = set(sums) | set(spec.base)
        if keys is not None:
            candidates &= keys
        topics = {
            key
            for key in candidates - spec.held
            if not is_index_key(key) and sums.get(key) != spec.base.get(key)
        }
        store = {
            key: data
            for key in candidates - spec.held
            if (key in topics or is_index_key(key))
            and key in sums
            and (data := _read_store_file(spec.directory, key)) is not None
        }
        self._gate(topics, store, secret_check, max_entry_bytes, result)
        topic = {k for k in clone if not is_index_key(k)}
        room = max_entries - len(topic)
        for key in sorted(topics):
            room = self._commit_key(spec, key, store.get(key), blobs, clone, result, room, changes)
        # Then the indexes, in the form they are shared: what that is depends on the files.
        in_repo = (set(clone) | set(result.committed)) - set(result.deleted)
        # A file deleted here that the clone has an edit of stays there (a conflict, now or
        # held until a person resolves it): so does its line, whatever the index here says.
        kept = {key for key in spec.held if key in clone and key not in sums} | {
            conflict.path.removeprefix(f"{spec.folder}/")
            for conflict in result.conflicts
            if conflict.ours is None and conflict.theirs is not None
        }
        indexes = {}
        for key in sorted(k for k in candidates - spec.held if is_index_key(k)):
            ours = shared_index(key, store[key], in_repo) if key in store else None
            if ours is not None and kept and key in blobs:
                ours = keep_entries(key, ours, self.read_blobs([blobs[key]])[blobs[key]], kept)
            if ours is not None and not ours.strip() and store[key].strip():
                ours = None  # only entries of files outside the repository: nothing to share
            if (checksum(ours) if ours is not None else None) != spec.base.get(key):
                indexes[key] = ours
        shared = {key: data for key, data in indexes.items() if data is not None}
        self._gate(set(indexes), shared, secret_check, max_entry_bytes, result)
        for key, ours in indexes.items():
            self._commit_key(
                spec, key, ours, blobs, clone, result, room, changes, full=store.get(key)
            )
        result.total_entries = (
            len(topic)
            + sum(1 for k in result.committed if k not in clone and not is_index_key(k))
            - sum(1 for k in result.deleted if not is_index_key(k))
        )
        if changes:
            result.commit = self.commit_files(
                {f"{spec.folder}/{key}": change for key, change in changes.items()},
                message or self._message(result),
                author,
            )
        return result

    @staticmethod
    def _gate(
        keys: set[str],
        files: Mapping[str, bytes],
        secret_check: SecretCheck,
        max_entry_bytes: int,
        result: CommitResult,
    ) -> None:
        """Add to `result.blocked` the `keys` whose content in `files` must not be committed."""
        texts = {}
        for key in sorted(keys & files.keys()):
            try:
                texts[key] = check_entry(key, files[key], max_bytes=max_entry_bytes, secrets=False)
            except FileRejected as exc:
                kept_back = result.too_large if exc.code == "entry_too_large" else result.invalid
                kept_back.append(key)
                result.blocked[key] = []
        result.blocked.update(secret_check(texts))

    def _commit_key(
        self,
        spec: StoreSpec,
        key: str,
        ours: bytes | None,
        blobs: Mapping[str, str],
        clone: Mapping[str, str],
        result: CommitResult,
        room: int,
        changes: dict[str, Change],
        full: bytes | None = None,
    ) -> int:
        """Add one changed key to `changes` (`ours`: its content as shared, None when deleted;
        `blobs` and `clone`: the folder's blob ids and checksums; `full`: what the store holds
        when that differs, shown in a conflict); returns the room left under the entry cap."""
        self._check(key)
        if key in result.blocked:
            return room
        shared = clone.get(key)
        if shared != spec.base.get(key) and shared != (None if ours is None else checksum(ours)):
            theirs = None if shared is None else self.read_blobs([blobs[key]])[blobs[key]]
            self._commit_diverged(spec, key, ours, theirs, result, changes, full)
            return room
        if ours is not None:
            if key not in clone and not is_index_key(key):
                if room <= 0:
                    result.capped.append(key)
                    return room
                room -= 1
            changes[key] = ours
            result.committed.append(key)
            result.base[key] = checksum(ours)
        else:
            if key in clone:
                changes[key] = None
                result.deleted.append(key)
            result.base.pop(key, None)
        return room

    def _commit_diverged(
        self,
        spec: StoreSpec,
        key: str,
        ours: bytes | None,
        theirs: bytes | None,
        result: CommitResult,
        changes: dict[str, Change],
        full: bytes | None = None,
    ) -> None:
        """Our change to a key the clone changed too: merge the two into `changes` (the store
        gets the result from the next `apply_incoming`), or return both as a conflict, where
        ours is `full` when given (the store's whole index, not the part of it shared)."""
        path = f"{spec.folder}/{key}"
        with self.repo() as repo:
            base = self._find_version(repo, path, spec.base.get(key))
            index = is_index_key(key)
            merged = None
            if ours is not None and theirs is not None and index:
                merged = _merge_indexes(base, ours, theirs)
            elif ours is not None and theirs is not None and base is not None:
                merged = self._merge_file(repo, ours, base, theirs)
        if merged is None:
            shown = (base, full if full is not None else ours, theirs)
            text = [v if v is None else v.decode("utf-8", "replace") for v in shown]
            kind = "edit" if ours is not None and theirs is not None else "edit_delete"
            result.conflicts.append(Conflict(path, kind, *text))
            return
        changes[key] = merged
        result.committed.append(key)
        result.base[key] = checksum(ours)  # so the next apply writes the merge to the store

    @staticmethod
    def _find_version(repo: Repo, path: str, wanted: str | None) -> bytes | None:
        """The content of `path` with checksum `wanted`, from the clone's recent history."""
        if wanted is None:
            return None
        for sha in repo.git.rev_list("-n", "200", "HEAD", "--", path).split():
            try:
                data = repo.git.show(
                    f"{sha}:{path}", stdout_as_string=False, strip_newline_in_stdout=False
                )
            except GitCommandError:
                continue
            if checksum(data) == wanted:
                return data
        return None

    @staticmethod
    def _merge_file(repo: Repo, ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
        """`git merge-file` of three versions; None when the edits overlap."""
        with tempfile.TemporaryDirectory() as tmp:
            names = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                (Path(tmp) / name).write_bytes(data)
                names.append(str(Path(tmp) / name))
            try:
                return repo.git.merge_file(
                    "-p",
                    *names,
                    stdout_as_string=False,
                    strip_newline_in_stdout=False,
                )
            except GitCommandError:  # exit status = the number of overlapping hunks
                return None

    @staticmethod
    def _message(result: CommitResult) -> str:
        parts = []
        if result.committed:
            parts.append("update " + ", ".join(sorted(result.committed)[:5]))
        if result.deleted:
            parts.append("delete " + ", ".join(sorted(result.deleted)[:5]))
        more = len(result.committed) + len(result.deleted) - 10
        return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")

    @staticmethod
    def _check(key: str) -> None:
        try:
            check_key(key)
        except PathTraversalError as exc:  # the key came from a store, but check anyway
            raise ValueError(f"refusing key {key!r}: {exc}") from exc

    # -- renames and deletions a person decides ----------------------------------------------------

    def move_folder(
        self, old: str, spec: StoreSpec, author: tuple[str, str] | None = None
    ) -> list[str]:
        """Move the store's files from folder `old` to `spec.folder` in one commit (a project's
        new slug, a team folder's new name): never a deletion and an addition, so no file is
        lost and git keeps each file's history.

        A file the new folder already holds with the same text is simply dropped from the old
        one; files only the new folder has stay. Returns the keys the new folder holds with
        other text: then nothing is moved (a person decides), else an empty list.
        """
        source = self.folder_files(old, exclude=spec.exclude)
        target = self.folder_files(spec.folder)
        fetched = self.folder_files(spec.folder, f"origin/{BRANCH}")
        clashes = sorted(
            key
            for key, data in source.items()
            if not is_index_key(key)
            and any(key in side and side[key] != data for side in (target, fetched))
        )
        if clashes or not source:
            return clashes
        blobs = self.tree_blobs(old, exclude=spec.exclude)
        changes: dict[str, Change] = {}
        for key, data in sorted(source.items()):
            self._check(key)
            changes[f"{old}/{key}"] = None
            if key in target and is_index_key(key):
                changes[f"{spec.folder}/{key}"] = union_lines(target[key], data)
            elif key not in target:  # the same blob: git sees the file moved, with its history
                changes[f"{spec.folder}/{key}"] = Blob(FILE_MODE, blobs[key])
        self.commit_files(changes, f"Move {old} to {spec.folder}", author)
        return []

    def incoming_deletions(self, spec: StoreSpec) -> list[str]:
        """The memory files integrating the remote would delete from the store: gone from its
        folder, unchanged here since the base."""
        clone = self.tree_blobs(spec.folder)
        store = store_checksums(spec.directory, spec.exclude)
        return sorted(
            key
            for key in set(spec.base) - set(clone) - spec.held
            if not is_index_key(key) and store.get(key) == spec.base[key]
        )

    def restore_files(
        self,
        spec: StoreSpec,
        keys: list[str],
        author: tuple[str, str] | None = None,
        *,
        secret_check: SecretCheck,
        max_entry_bytes: int,
    ) -> dict[str, str]:
        """Put the store's `keys` back into its folder, with their index lines, in one commit
        (a person refused their deletion). Returns the new base of every key written.

        What goes passes the push gate and the entry checks first, as any commit: a held file
        is out of sync, so an edit made to it meanwhile was never gated. A file (or index)
        kept back is left out: its base is the caller's to drop, so that the next sync's
        commit sees it changed, gates it again and records why it stays back."""
        store = read_store(spec.directory, spec.exclude)
        shared = self.folder_files(spec.folder)
        written: dict[str, bytes] = {key: store[key] for key in keys if key in store}
        gated = CommitResult()
        self._gate(set(written), written, secret_check, max_entry_bytes, gated)
        written = {key: data for key, data in written.items() if key not in gated.blocked}
        indexes: dict[str, bytes] = {}
        for key in {k for k in store if is_index_key(k)}:
            index = shared_index(key, store[key], set(shared) | set(written))
            indexes[key] = union_lines(shared.get(key, b""), index)
        self._gate(set(indexes), indexes, secret_check, max_entry_bytes, gated)
        written.update((key, data) for key, data in indexes.items() if key not in gated.blocked)
        for key in written:
            self._check(key)
        summary = f"Keep {len(keys)} files a sync would have deleted"
        self.commit_files(
            {f"{spec.folder}/{key}": data for key, data in written.items()}, summary, author
        )
        return {key: checksum(data) for key, data in written.items()}

    # -- remote changes --------------------------------------------------------------------------

    @contextlib.contextmanager
    def fetching(self) -> Iterator[None]:
        """Within it, a fetch of the remote branch runs in the background, which the next
        `fetch()` waits for and answers with: a sync commits its stores' local changes while
        the remote answers. Waited for on the way out, whatever happened."""
        self._fetching = self._start_fetch()
        try:
            yield
        finally:
            if self._fetching is not None:
                self._fetching.communicate()
                self._fetching = None

    def _start_fetch(self) -> subprocess.Popen[bytes]:
        # In English, as GitPython runs git: an empty remote is told from its answer's words.
        return subprocess.Popen(
            ["git", "fetch", "origin", BRANCH],
            cwd=self.git_dir,
            env={**os.environ, "LANGUAGE": "C", "LC_ALL": "C"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def fetch(self) -> str | None:
        """Fetch the remote branch (or wait for the fetch `fetching` began); the error text
        when that failed."""
        process, self._fetching = self._fetching or self._start_fetch(), None
        _, stderr = process.communicate()
        if process.returncode == 0:
            return None
        error = GitCommandError(process.args, process.returncode, stderr.removesuffix(b"\n"))
        text = f"{error.stderr or error}".strip()
        if "couldn't find remote ref" in text:
            return None  # an empty remote: nothing to integrate yet
        return text

    def integrate(self) -> IntegrateResult:
        """Merge the fetched remote branch; overlapping edits come back as conflicts.

        A fast-forward moves the branch; a merge is `git merge-tree` and one commit of what it
        changed: no file is checked out either way (the stores get theirs from git's objects)."""
        head = self.head()
        result = IntegrateResult(before=head)
        found = self._git("rev-parse", "--verify", "--quiet", f"origin/{BRANCH}", ok=(0, 1))
        theirs = found.decode().strip()
        if not theirs or head is None:
            return result
        with self.repo() as repo:
            if repo.git.rev_list("--count", f"{head}..{theirs}") == "0":
                return result
            result.merged = True
            if repo.git.rev_list("--count", f"{theirs}..{head}") == "0":
                # Nothing of ours to merge: fast-forward. A merge commit here would be new to
                # the remote, and two idle members would trade empty merges on every sync.
                repo.git.update_ref(f"refs/heads/{BRANCH}", theirs, head)
                return result
            # Unrelated histories: two clones that each started before anything was pushed.
            out = self._git(
                "merge-tree",
                "--write-tree",
                "-z",
                "--no-messages",
                "--allow-unrelated-histories",
                head,
                theirs,
                ok=(0, 1),
            )
            tree, *listed = out.split(b"\0")
            changes = self._tree_changes(head, tree.decode())
            result.conflicts = self._settle_conflicts(listed, changes)
            message = f"Merge remote-tracking branch 'origin/{BRANCH}'"
            self.commit_files(changes, message, merge=theirs)
            self._clean_indexes(repo, {conflict.path for conflict in result.conflicts})
        return result

    def _changed_paths(self, *args: str) -> list[str]:
        """The paths `git diff --name-only` lists for `args`, read NUL-separated (`-z`): without
        it git quotes a name that is not ASCII or holds a quote or a line break."""
        out = self._git("diff", "--name-only", "--no-renames", "-z", *args)
        return [path.decode("utf-8", "surrogateescape") for path in out.split(b"\0") if path]

    def _tree_changes(self, commit: str, tree: str) -> dict[str, Change]:
        """What turns `commit`'s tree into `tree`, path by path."""
        out = self._git("diff-tree", "-r", "-z", "--no-renames", commit, tree).split(b"\0")
        changes: dict[str, Change] = {}
        for meta, path in zip(out[0::2], out[1::2], strict=False):
            if not meta:
                break
            _old_mode, mode, _old, sha, status = meta.decode().lstrip(":").split(" ")
            changes[path.decode("utf-8", "surrogateescape")] = (
                None if status == "D" else Blob(mode, sha)
            )
        return changes

    def _settle_conflicts(self, listed: list[bytes], changes: dict[str, Change]) -> list[Conflict]:
        """Leave the merge without markers: keep the remote's edit (or whichever side still has
        the file), and hand every conflict back with all three versions. `listed`: the
        conflicted entries of `git merge-tree -z` (mode, blob, stage, path)."""
        stages: dict[str, dict[int, Blob]] = {}
        for item in listed:
            if not item:
                break
            meta, _, path = item.partition(b"\t")
            mode, sha, stage = meta.decode().split(" ")
            found = stages.setdefault(path.decode("utf-8", "surrogateescape"), {})
            found[int(stage)] = Blob(mode, sha)
        data = self.read_blobs([blob.sha for found in stages.values() for blob in found.values()])
        conflicts = []
        for path, found in stages.items():
            base, ours, theirs = (
                data[found[n].sha].decode("utf-8", "replace") if n in found else None
                for n in (1, 2, 3)
            )
            if 2 in found and 3 in found:
                kind, keep = "edit", found[3]
            else:
                kind, keep = "edit_delete", found.get(2) or found[3]
            changes[path] = keep
            conflicts.append(Conflict(path, kind, base, ours, theirs))
        return conflicts

    def _clean_indexes(self, repo: Repo, conflicted: Collection[str]) -> None:
        """After a merge, each index both sides changed is merged line by line (`merge_index`,
        the remote's order), then entries whose file either side deleted are dropped, and
        lines doubled.

        The merge may equal our own index (their side only removed a line next to one we
        added), so the indexes above every deleted file are checked, not only changed ones.
        Entries of files that were never in the repository (blocked here or there) stay, and
        so do the entries of files a conflict kept (`conflicted`: an edit against a deletion keeps
        the edited file, and its line is part of what was written): one side removing such
        a line is merged as the other side adding it.
        """
        changed = self._changed_paths("HEAD^1", "HEAD")
        gone: set[str] = set()
        for parent in ("HEAD^1", "HEAD^2"):
            gone.update(self._changed_paths("--diff-filter=D", parent, "HEAD"))
        kept = {path for path in conflicted if PurePosixPath(path).name != INDEX_FILENAME}
        indexes = {path for path in changed if PurePosixPath(path).name == INDEX_FILENAME}
        for path in gone | kept:
            indexes.update(str(d / INDEX_FILENAME) for d in PurePosixPath(path).parents)
        try:
            base_commit = repo.git.merge_base("HEAD^1", "HEAD^2")
        except GitCommandError:  # unrelated histories: no common version
            base_commit = None
        changes: dict[str, Change] = {}
        for path in sorted(indexes):
            current = _show(repo, f"HEAD:{path}")
            ours, theirs = (_show(repo, f"{parent}:{path}") for parent in ("HEAD^1", "HEAD^2"))
            if current is None:  # one side deleted it: back only for the files a conflict kept
                if not kept & (_linked(path, ours or b"") | _linked(path, theirs or b"")):
                    continue
                ours, theirs = ours or b"", theirs or b""
            if ours is not None and theirs is not None and ours != theirs:
                base = _show(repo, f"{base_commit}:{path}") if base_commit else None
                if base is not None and kept:
                    one_side = (_linked(path, ours) ^ _linked(path, theirs)) & kept
                    base = without_entries(path, base, one_side)
                current = changes[path] = _merge_indexes(base, ours, theirs)
            if current is None:
                continue
            text = current.decode("utf-8", "replace")  # CRLF line ends kept
            lines = text.splitlines(keepends=True)
            drop = {number for number, file in _entry_files(path, text) if file in gone}
            seen: set[str] = set()
            cleaned = []
            for number, line in enumerate(lines, 1):
                if number in drop or (line.strip() and line in seen):
                    continue
                seen.add(line)
                cleaned.append(line)
            if cleaned != lines:
                changes[path] = "".join(cleaned).encode("utf-8")
        self.commit_files(changes, "Rebuild MEMORY.md after merging")

    def tree_blobs(
        self, folder: str, ref: str = "HEAD", exclude: Collection[str] = ()
    ) -> dict[str, str]:
        """The memory files of `folder` in commit `ref`, as git blob ids by key (the files
        :func:`read_store` would find in that folder checked out, listed from git's objects
        without reading one); empty when there is no such commit."""
        try:
            out = self._git("ls-tree", "-r", "-z", "--full-tree", ref, "--", f"{folder}/")
        except GitCommandError:
            return {}
        prefix = folder + "/"
        blobs = {}
        for line in out.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, path = line.partition("\t")
            mode, _, rest = meta.partition(" ")
            kind, _, blob = rest.partition(" ")
            key = path.removeprefix(prefix)
            # Regular files only: the walk of a checked-out folder follows no symlink.
            if kind == "blob" and mode in ("100644", "100755") and is_store_key(key, exclude):
                blobs[key] = blob
        return blobs

    def folder_files(
        self, folder: str, ref: str = "HEAD", exclude: Collection[str] = ()
    ) -> dict[str, bytes]:
        """The memory files of `folder` in commit `ref`, by key, from git's objects."""
        blobs = self.tree_blobs(folder, ref, exclude)
        data = self.read_blobs(blobs.values())
        return {key: data[blob] for key, blob in blobs.items()}

    def has_folder(self, folder: str) -> bool:
        """Whether the clone's last commit has a folder `folder`."""
        if not self.git_dir.is_dir():
            return False
        out = self._git("cat-file", "-t", f"HEAD:{folder}", ok=(0, 128))
        return out.strip() == b"tree"

    def read_blobs(self, blobs: Collection[str]) -> dict[str, bytes]:
        """The content of git blobs by id, from git's objects in one `git cat-file --batch`."""
        if not blobs:
            return {}
        ids = list(dict.fromkeys(blobs))
        out = self._git("cat-file", "--batch", input="".join(f"{blob}\n" for blob in ids).encode())
        contents, pos = {}, 0
        for blob in ids:
            end = out.index(b"\n", pos)
            _sha, kind, size = out[pos:end].split(b" ")
            if kind != b"blob":
                raise GitCommandError(["git", "cat-file", "--batch"], 1, f"{blob}: {kind!r}")
            start = end + 1
            contents[blob] = out[start : start + int(size)]
            pos = start + int(size) + 1
        return contents

    def _checksums(
        self, blobs: Mapping[str, str], read: dict[str, bytes] | None = None
    ) -> dict[str, str]:
        """:func:`checksum` of each key's blob, reading only blobs not seen before (their
        content is left in `read`, by blob id, when given)."""
        unseen = [blob for blob in blobs.values() if blob not in _blob_checksums]
        if len(_blob_checksums) + len(unseen) > MAX_REMEMBERED_BLOBS:
            _blob_checksums.clear()
            unseen = list(blobs.values())
        for blob, data in self.read_blobs(unseen).items():
            _blob_checksums[blob] = checksum(data)
            if read is not None:
                read[blob] = data
        return {key: _blob_checksums[blob] for key, blob in blobs.items()}

    def apply_incoming(
        self, spec: StoreSpec, meanwhile: Callable[[IncomingResult], object] | None = None
    ) -> IncomingResult:
        """Write to the store what changed in its folder since the base; the store's own
        changes are never overwritten (a key changed on both sides waits for the next sync,
        which commits it and lets git merge it). Indexes come last and are compared in their
        shared form; an arriving one keeps the store's entries of files outside the
        repository.

        What arrived is read from git's objects (the folder's tree at HEAD), and only the
        blobs that differ from the base; the store's side is compared by checksums that
        re-read only files whose stat changed (:func:`store_checksums`). So a pull costs the
        files it changes, not the folder's size, and no checkout pass touches the rest.
        `meanwhile` is given the result (what is written) while the writes wait on the disk."""
        result = IncomingResult(base=dict(spec.base))
        blobs = self.tree_blobs(spec.folder)
        data: dict[str, bytes] = {}  # what arrived is read once, for its checksum and to write
        clone = self._checksums(blobs, data)
        store = store_checksums(spec.directory, spec.exclude)
        keys = sorted((set(clone) | set(spec.base)) - spec.held, key=lambda k: (is_index_key(k), k))
        changed = [key for key in keys if clone.get(key) != spec.base.get(key)]
        data.update(self.read_blobs([b for k in changed if (b := blobs.get(k)) and b not in data]))
        targets = entry_paths(spec.directory, changed, spec.exclude)
        writes: dict[Path, bytes] = {}
        for key in changed:
            arriving = clone.get(key)
            incoming = data[blobs[key]] if arriving is not None else None
            current = store.get(key)
            if is_index_key(key) and current is not None:
                in_repo = set(clone) | set(result.deleted)  # what goes now was shared
                ours = _read_store_file(spec.directory, key)
                if ours is None:
                    current = None  # gone since its checksum was taken
                else:
                    incoming = with_local_entries(key, incoming, ours, in_repo)
                    current = checksum(shared_index(key, ours, in_repo))
            if current == arriving:
                self._set_base(result.base, key, arriving)
                continue
            if current != spec.base.get(key):
                result.not_applied.append(key)
                continue
            target = targets[key]
            if isinstance(target, FileRejected):
                result.not_applied.append(key)
                continue
            if incoming is None:
                delete_file(target, missing_ok=True)
                result.deleted.append(key)
            else:
                writes[target] = incoming
                result.written.append(key)
                result.contents[key] = incoming
            self._set_base(result.base, key, arriving)
        for directory in {target.parent for target in writes}:  # every key checked above
            directory.mkdir(parents=True, exist_ok=True)
        stats = write_atomic_files(writes, None if meanwhile is None else lambda: meanwhile(result))
        result.stats = {key: stats[targets[key]] for key in result.written}
        return result

    @staticmethod
    def _set_base(base: dict[str, str], key: str, value: str | None) -> None:
        if value is None:
            base.pop(key, None)
        else:
            base[key] = value

    # -- publishing ------------------------------------------------------------------------------

    def unpushed(self) -> int:
        with self.repo() as repo:
            try:
                return int(repo.git.rev_list("--count", f"origin/{BRANCH}..HEAD"))
            except GitCommandError:
                return int(repo.git.rev_list("--count", "HEAD"))

    def unpushed_files(self) -> int:
        """How many memory files the unpushed commits change."""
        with self.repo() as repo:
            try:
                repo.git.rev_parse("--verify", f"origin/{BRANCH}")
                since = f"origin/{BRANCH}"
            except GitCommandError:
                since = repo.git.hash_object("-t", "tree", "/dev/null")  # the empty tree
        return sum(1 for path in self._changed_paths(since, "HEAD") if path.endswith(".md"))

    def push_once(self) -> tuple[bool, str | None, bool]:
        """One `git push`: (ok, error text, whether the error is permanent)."""
        with self.repo() as repo:
            try:
                repo.git.push("origin", f"HEAD:refs/heads/{BRANCH}")
            except GitCommandError as exc:
                text = f"{exc.stderr or exc}".strip()
                return False, text, is_permanent(text)
        return True, None, False

    def log(self, folder: str, limit: int = 50) -> list[dict]:
        """The history of a folder: newest first, with authors."""
        with self.repo() as repo:
            if not repo.head.is_valid():
                return []
            out = repo.git.log(f"-{limit}", "--format=%H%x1f%an%x1f%ae%x1f%aI%x1f%s", "--", folder)
        rows = []
        for line in out.splitlines():
            sha, name, email, when, subject = line.split("\x1f")
            rows.append(
                {"sha": sha, "author": name, "email": email, "date": when, "subject": subject}
            )
        return rows

    def last_authors(self, paths: list[str], since: str | None = None) -> dict[str, str]:
        """Who made the latest commit touching each of `paths` (repository paths). `since`: a
        commit before which most of them did not change (the clone's head before a pull): the
        commits after it are read first, the whole history only for paths they do not touch."""
        if not paths or self.head() is None:
            return {}
        authors = self._authors(paths, f"{since}..HEAD") if since else {}
        rest = [path for path in paths if path not in authors]
        if rest:
            authors.update(self._authors(rest, "HEAD"))
        return authors

    def _authors(self, paths: list[str], commits: str) -> dict[str, str]:
        """Who made the latest of `commits` touching each of `paths`. The log is read
        NUL-separated (`-z`: a name is never quoted) and the paths taken literally (a `*` or
        `[` in a name is no pattern): each commit's author, then the paths it changed."""
        wanted = {path.encode("utf-8", "surrogateescape") for path in paths}
        out = self._git(
            "--literal-pathspecs",
            "log",
            "-z",
            "--format=%x1e%an",
            "--name-only",
            "--no-renames",
            commits,
            "--",
            *paths,
        )
        authors: dict[str, str] = {}
        name = ""
        for item in out.split(b"\0"):
            path = item.lstrip(b"\n")  # the line break after a commit's author
            if path in wanted:
                authors.setdefault(path.decode("utf-8", "surrogateescape"), name)
            elif item.startswith(b"\x1e"):
                name = item[1:].decode("utf-8", "replace")
        return authors

    def show(self, sha: str, path: str) -> str | None:
        with self.repo() as repo:
            try:
                return repo.git.show(f"{sha}:{path}", strip_newline_in_stdout=False)
            except GitCommandError:
                return None


def init_bare_remote(path: Path) -> None:
    """The embedded default remote: a bare repository in memhub's data dir."""
    if not (path / "HEAD").exists():
        path.mkdir(parents=True, exist_ok=True)
        Repo.init(path, bare=True, initial_branch=BRANCH).close()
