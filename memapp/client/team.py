"""The team sync engine: a project's team memory through the team memory protocol, as Claude
Code's own client speaks it (docs/design.md §10); its command, `memhub-agent team sync
[--watch]`, is `memapp.client.team_commands`.

The local side is the agent's team directory, `<memory dir>/team/`; the remote side is
`/api/claude_code/team_memory?repo=owner%2Frepo`, the slug coming from the checkout's git
`origin`. One run pulls, then pushes:

- **pull** GETs the whole team memory (`If-None-Match` with the checksum last seen: a 304 means
  nothing changed) and writes, atomically, only the entries whose content differs here. Every
  key is validated first (docs/design.md §4, Markdown only); entries over 250,000 bytes are skipped.
- **push** uploads only the keys changed here since the last sync whose checksum differs from
  the server's, in batches whose JSON body stays under 200,000 bytes, each with `If-Match` set
  to the checksum of the last fetch. A 412 (someone wrote meanwhile) fetches `view=hashes` and
  decides again, at most twice. Files the fast secret rules flag are skipped and reported, and
  so are files the server refuses (422, 413): the rest still goes.

Which side changed is known from the checksum each key had at the last sync (kept in the config
dir), so an edit made here is never overwritten by a pull and an edit made there is never
overwritten by a push. When both changed, the local version is kept and uploaded: the server
commits every version to git, so the other one stays in its history, and the run reports it.
A `MEMORY.md` changed on both sides is merged line by line instead (`merge_index`, from the
text it had at the last sync, also kept in the config dir): the merge is written here and
uploaded, so the team's entries and this member's all stay.

Like Claude Code's client, this one cannot delete anything on the server (memhub's own files
API and review UI do that). A key the server no longer has but that is unchanged here since
the last sync was deleted there: it is not uploaded again (and left in place here).
Transient failures are retried by `memapp.client.http` (500 ms doubling to 32 s, ±25 %).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from memapp.client.config import private_dir, write_private
from memapp.client.http import ApiError, Client
from memapp.client.sync_state import (
    exclusive,
    local_checksum,
    read_refusal,
    read_state,
    team_state_identity,
    team_state_path,
)
from memapp.memdir.atomic import write_atomic
from memapp.memdir.index import merge_index
from memapp.memdir.keys import PathTraversalError, validate_key
from memapp.memdir.secret_rules import place, scan_name, scan_text
from memapp.memdir.store_files import (
    MAX_BATCH_BYTES,
    FileRejected,
    check_entry,
    checksum,
    is_index_key,
    is_store_key,
    read_store_file,
    split_batches,
    walk_store,
)

__all__ = [
    "DEBOUNCE_SECONDS",
    "MAX_CONFLICT_RETRIES",
    "POLL_SECONDS",
    "UNREACHABLE_PROJECT",
    "TeamBusy",
    "TeamReport",
    "TeamSync",
    "batches",
    "scan_team_dir",
    "team_dir_stats",
]

ENDPOINT = "/api/claude_code/team_memory"
MAX_CONFLICT_RETRIES = 2
DEBOUNCE_SECONDS = 2.0
POLL_SECONDS = 0.5
# A 404 that is not "nothing there yet": no project memhub lets this user reach under the
# slug, or team memory switched off. Reporting an empty sync would hide it (exit non-zero).
UNREACHABLE_PROJECT = ("no_project", "team_memory_off")


class TeamBusy(Exception):
    """Another `team sync` of the same team directory is running."""


class _Stop(Exception):
    """No more pushing in this run (the reason is in the report)."""


def _body_size(key: str, text: str) -> int:
    """The bytes one entry adds to a PUT body as `Client` encodes it (ASCII JSON):
    `{"key": "text"}` is exactly as long as `"key": "text", ` inside the body."""
    return len(json.dumps({key: text}))


def batches(entries: dict[str, str], limit: int = MAX_BATCH_BYTES) -> Iterator[dict[str, str]]:
    """Consecutive groups of `entries` whose PUT body stays under `limit` bytes; an entry too
    big for any batch (up to the 250,000-byte entry limit) goes alone."""
    overhead = len(json.dumps({"entries": {}}))
    for group in split_batches(
        sorted(entries), lambda key: _body_size(key, entries[key]), limit, overhead
    ):
        yield {key: entries[key] for key in group}


@dataclass
class TeamReport:
    """What one run did; `summary()` is its one line, `details()` the lines behind it."""

    repo: str
    pulled: list[str] = field(default_factory=list)
    pushed: list[str] = field(default_factory=list)
    batches: int = 0
    conflict_retries: int = 0
    secrets: list[dict[str, Any]] = field(default_factory=list)  # key, rule_id, label, line
    held: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # files left out, each with its reason
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the run did not finish its work
    version: int | None = None

    def add_secrets(self, hits: list[dict[str, Any]]) -> None:
        """Record secret hits (once each, however often a retry meets them)."""
        self.secrets += [hit for hit in hits if hit not in self.secrets]

    def skip(self, line: str) -> None:
        if line not in self.skipped:
            self.skipped.append(line)

    def summary(self) -> str:
        skipped = len({hit["key"] for hit in self.secrets})
        version = "none yet" if self.version is None else self.version
        return (
            f"team {self.repo}: pulled {len(self.pulled)}, pushed {len(self.pushed)} in "
            f"{self.batches} {'batch' if self.batches == 1 else 'batches'}, skipped {skipped} "
            f"(secrets), conflicts {len(self.conflicts)}, version {version}"
        )

    def details(self) -> list[str]:
        lines = [
            f"{hit['key']}: not sent: {hit['label']} ({hit['rule_id']}) "
            f"{place(hit['line'], on=True)}"
            for hit in self.secrets
        ]
        lines += [
            f"{key}: deleted in memhub; your copy is held there for review" for key in self.held
        ]
        return lines + self.skipped + self.conflicts + self.notes + self.errors


@dataclass
class _Remote:
    """The server's side as last fetched: the top-level checksum and each entry's."""

    checksum: str | None = None  # None: no team memory there yet (404)
    entries: dict[str, str] = field(default_factory=dict)
    version: int | None = None
    known: bool = False  # whether `entries` were fetched (a checksum alone may be remembered)


def scan_team_dir(team_dir: Path) -> tuple[dict[str, bytes], set[str]]:
    """The memory files of the team directory by key (the file rule of docs/design.md §6a:
    hidden names, daily logs and conflict copies left out), and the keys that exist but must
    not be touched (symlinks and other non-regular files: following one could read or write
    outside the directory)."""
    files: dict[str, bytes] = {}
    untouchable: set[str] = set()
    for found in walk_store(team_dir, untouchable=untouchable):
        data = read_store_file(found)
        if data is None:
            untouchable.add(found.key)
        else:
            files[found.key] = data
    return files, untouchable


def team_dir_stats(team_dir: Path) -> dict[str, tuple[int, int, int]]:
    """Cheap change detection for watch mode: (mtime, size, inode) of every memory file."""
    return {
        found.key: (found.stat.st_mtime_ns, found.stat.st_size, found.stat.st_ino)
        for found in walk_store(team_dir)
    }


class TeamSync:
    """Sync one team directory with one repo's team memory on one server.

    `secret_scan` is the local rule set run before anything is sent. The state (the checksum
    each key had at the last sync, and the top-level checksum last pulled) lives in
    `state_dir`, one file per server, repo and directory.
    """

    def __init__(
        self,
        client: Client,
        repo: str,
        team_dir: Path,
        state_dir: Path,
        *,
        secret_scan: Callable[[str], list] = scan_text,
    ) -> None:
        self.client = client
        self.repo = repo
        self.team_dir = team_dir
        self.secret_scan = secret_scan
        self.state_path = team_state_path(state_dir, client.url, repo, team_dir)
        self.identity = team_state_identity(client.url, repo, team_dir)
        self.remote = _Remote()
        self.base: dict[str, str] = {}
        self.index_texts: dict[str, str] = {}  # each index's text at the last sync
        # The top-level checksum of the last server state fully applied here (what a 304 to
        # `If-None-Match` may stand for); a push moves it on only from that very state.
        self.pulled: str | None = None
        self._refused_keys: set[str] = set()  # refused by the server in the current push
        self._load()

    # --- state --------------------------------------------------------------------------------

    def _load(self) -> None:
        state = read_state(self.state_path, self.identity)
        files = state.get("files")
        if isinstance(files, dict):
            self.base = {k: v for k, v in files.items() if isinstance(v, str)}
        indexes = state.get("indexes")
        if isinstance(indexes, dict):
            self.index_texts = {k: v for k, v in indexes.items() if isinstance(v, str)}
        if isinstance(state.get("pulled"), str):
            self.pulled = state["pulled"]
        if isinstance(state.get("server_version"), int):
            self.remote.version = state["server_version"]

    def save(self) -> None:
        self._remember_indexes()
        body = {
            **self.identity,
            "pulled": self.pulled,
            "server_version": self.remote.version,
            "files": dict(sorted(self.base.items())),
            "indexes": dict(sorted(self.index_texts.items())),
        }
        private_dir(self.state_path.parent)
        write_private(self.state_path, (json.dumps(body, indent=1) + "\n").encode())

    def _remember_indexes(self) -> None:
        """Keep the text of each index that is here as it was last synced: the base of the
        next line-by-line merge."""
        for key, synced in self.base.items():
            if not is_index_key(key):
                continue
            try:
                data = validate_key(self.team_dir, key).read_bytes()
            except (OSError, PathTraversalError):
                continue
            if checksum(data) == synced:
                self.index_texts[key] = data.decode("utf-8", "surrogateescape")
        for key in [k for k in self.index_texts if k not in self.base]:
            del self.index_texts[key]

    def _index_base(self, key: str) -> str:
        text = self.index_texts.get(key)
        synced = self.base.get(key)
        if text is None or synced != checksum(text.encode("utf-8", "surrogateescape")):
            return ""  # never synced here: the merge then adds this side's lines to theirs
        return text

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One run at a time per team directory (a watcher and a manual run included)."""
        private_dir(self.state_path.parent)
        with exclusive(
            self.state_path.with_suffix(".lock"),
            TeamBusy(f"another team sync is running (lock {self.state_path.with_suffix('.lock')})"),
        ):
            yield

    # --- protocol -----------------------------------------------------------------------------

    def _url(self, view: str | None = None) -> str:
        url = f"{ENDPOINT}?repo={quote(self.repo, safe='')}"
        return url + (f"&view={view}" if view else "")

    def _fetch(self, *, hashes: bool, if_none_match: str | None = None) -> dict | None:
        """The server's answer to GET (None when it has no team memory for the repo, or when
        it answered 304); `self.remote` is updated either way."""
        headers = {"If-None-Match": f'"{if_none_match}"'} if if_none_match else {}
        try:
            answer = self.client.request(
                "GET", self._url("hashes" if hashes else None), headers=headers
            )
        except ApiError as exc:
            if exc.status == 304:
                return None
            if exc.status == 404 and exc.code not in UNREACHABLE_PROJECT:
                self.remote = _Remote(known=True)  # the project is there; its memory is empty
                return None
            raise
        content = answer.get("content") or {}
        sums = content.get("entryChecksums") or {}
        self.remote = _Remote(answer.get("checksum"), dict(sums), answer.get("version"), True)
        return answer

    # --- pull ---------------------------------------------------------------------------------

    def pull(self, report: TeamReport) -> None:
        """Write here what changed on the server (and only that)."""
        local, untouchable = scan_team_dir(self.team_dir)
        # A 304 says nothing changed there; it would also leave a file deleted here missing,
        # so the checksum is only offered while every synced file is still in place.
        intact = self.base.keys() <= local.keys()
        answer = self._fetch(hashes=False, if_none_match=self.pulled if intact else None)
        report.version = self.remote.version
        if answer is None:
            if self.remote.known and self.remote.checksum is None:
                return  # 404: no team memory there yet
            if self.remote.checksum != self.pulled:  # 304: it is still what we applied
                self.remote = _Remote(self.pulled, version=self.remote.version)
            return
        entries = (answer.get("content") or {}).get("entries") or {}
        complete = True
        for key in sorted(entries):
            complete &= self._pull_one(key, entries[key], local, untouchable, report)
        self.pulled = self.remote.checksum if complete else None

    def _pull_one(
        self,
        key: str,
        text: Any,
        local: dict[str, bytes],
        untouchable: set[str],
        report: TeamReport,
    ) -> bool:
        """Bring one entry here if it changed only there; False when it is left for the next
        run (the file changed during this one)."""
        path = self._path(key, report)
        if path is None:
            return True
        if key in untouchable:
            report.skip(f"{key}: not a regular file here; skipped")
            return True
        if not isinstance(text, str):
            report.skip(f"{key}: not text on the server; skipped")
            return True
        try:
            check_entry(key, text, secrets=False)
        except FileRejected as exc:
            report.skip(f"{exc} (the server's copy); skipped")
            return True
        incoming = checksum(text.encode("utf-8"))
        if self.remote.entries.get(key, incoming) != incoming:
            report.skip(f"{key}: the server's copy does not match its checksum; skipped")
            return True
        current = checksum(local[key]) if key in local else None
        base = self.base.get(key)
        if current == incoming:
            self.base[key] = incoming
            return True
        if current is not None and current != base:
            if incoming != base and is_index_key(key):
                return self._merge_index(key, path, text, local[key], report)
            if incoming != base:  # changed on both sides: ours is kept and pushed
                report.conflicts.append(
                    f"{key}: changed here and on the server; kept yours (the server's "
                    "version stays in its history)"
                )
            return True
        if local_checksum(path) != current:
            report.notes.append(f"{key}: changed during the sync; left for the next run")
            return False
        if current is None and base is not None:
            report.notes.append(
                f"{key}: deleted here but not in memhub (this client cannot delete); "
                "restored: delete it in memhub"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
        self.base[key] = incoming
        report.pulled.append(key)
        return True

    def _merge_index(
        self, key: str, path: Path, incoming: str, data: bytes, report: TeamReport
    ) -> bool:
        """An index changed here and on the server: both merged line by line, written here
        (the push then uploads it); False when the file changed during the run."""
        ours = data.decode("utf-8", "surrogateescape")
        merged = merge_index(self._index_base(key), ours, incoming)
        if local_checksum(path) != checksum(data):
            report.notes.append(f"{key}: changed during the sync; left for the next run")
            return False
        if merged != ours:
            write_atomic(path, merged)
        self.base[key] = checksum(incoming.encode("utf-8"))
        self.index_texts[key] = incoming
        report.notes.append(
            f"{key}: changed here and on the server; merged line by line (every entry of both kept)"
        )
        if merged != ours:
            report.pulled.append(key)
        return True

    def _path(self, key: str, report: TeamReport) -> Path | None:
        if not is_store_key(key):
            report.skip(f"{key!r}: not a memory file; skipped")
            return None
        try:
            return validate_key(self.team_dir, key)
        except PathTraversalError as exc:
            report.skip(f"{exc}; skipped")
            return None

    # --- push ---------------------------------------------------------------------------------

    def _changes(self, report: TeamReport) -> dict[str, str]:
        """The local entries to upload: changed here since the last sync (or new) and not what
        the server has; secrets, oversized and unreadable files are reported and left out."""
        local, _ = scan_team_dir(self.team_dir)
        changes: dict[str, str] = {}
        for key, data in local.items():
            current = checksum(data)
            remote = self.remote.entries.get(key)
            if current == remote:
                self.base[key] = current
                continue
            if current == self.base.get(key):
                continue  # unchanged here: the server changed or deleted it
            if self._path(key, report) is None:
                continue
            try:
                text = check_entry(key, data, secrets=False)
            except FileRejected as exc:
                report.skip(f"{exc}; skipped")
                continue
            hits = [*scan_name(key), *self.secret_scan(text)]
            if hits:
                report.add_secrets(
                    [
                        {"key": key, "rule_id": h.rule_id, "label": h.label, "line": h.line}
                        for h in hits
                    ]
                )
                continue
            if key not in self._refused_keys:
                changes[key] = text
        return changes

    def push(self, report: TeamReport) -> None:
        """Upload what changed here; on 412 refetch the hashes and decide again (twice)."""
        if not self.remote.known:
            local, _ = scan_team_dir(self.team_dir)
            if all(checksum(data) == self.base.get(key) for key, data in local.items()):
                return  # nothing changed here since the last sync
            self._fetch(hashes=True)
        self._refused_keys = set()
        for attempt in range(MAX_CONFLICT_RETRIES + 1):
            try:
                self._push_changes(report, self._changes(report))
                return
            except ApiError as exc:
                if exc.status != 412:
                    raise
            if attempt == MAX_CONFLICT_RETRIES:
                report.errors.append(
                    "the team memory kept changing on the server during the push "
                    f"({MAX_CONFLICT_RETRIES} retries); run it again"
                )
                return
            report.conflict_retries += 1
            self._fetch(hashes=True)

    def _push_changes(self, report: TeamReport, changes: dict[str, str]) -> None:
        for batch in batches(changes):
            pending = dict(batch)
            while pending:
                try:
                    answer = self._put(pending)
                except ApiError as exc:
                    named = self._refused(exc, pending, report)
                    if not named:
                        raise
                    self._refused_keys |= named
                    pending = {k: v for k, v in pending.items() if k not in named}
                    continue
                self._record(pending, answer, report)
                break

    def _put(self, entries: dict[str, str]) -> dict:
        headers = {"If-Match": f'"{self.remote.checksum}"'} if self.remote.checksum else {}
        return self.client.request("PUT", self._url(), {"entries": entries}, headers=headers)

    def _refused(self, exc: ApiError, pending: dict[str, str], report: TeamReport) -> set[str]:
        """The keys of this batch a refusal names (reported); empty when it names none."""
        if exc.status == 413 and exc.details.get("error_code") == "team_memory_too_many_entries":
            report.errors.append(
                f"the server holds at most {exc.details.get('max_entries')} team entries; "
                f"{len(pending)} new or changed entries not sent"
            )
            raise _Stop
        refusal = read_refusal(exc, pending)
        report.add_secrets(refusal.secrets)
        if refusal.key is not None:
            report.skip(f"{refusal.key}: refused by the server: {exc.message}")
        return refusal.keys

    def _record(self, sent: dict[str, str], answer: dict, report: TeamReport) -> None:
        if self.pulled is not None and self.pulled == self.remote.checksum:
            # The server was in the state we have here; now it is that plus what we sent.
            self.pulled = answer.get("checksum")
        held = set(answer.get("held") or [])
        for key, text in sent.items():
            value = checksum(text.encode("utf-8"))
            self.base[key] = value
            if key in held:
                report.held.append(key)
            else:
                self.remote.entries[key] = value
                report.pushed.append(key)
        self.remote.checksum = answer.get("checksum", self.remote.checksum)
        self.remote.version = answer.get("version", self.remote.version)
        report.version = self.remote.version
        report.batches += 1
        self.save()

    # --- runs ---------------------------------------------------------------------------------

    def run(self, *, pull: bool = True, push: bool = True) -> TeamReport:
        """One run (pull, then push), its state saved whatever happens."""
        report = TeamReport(self.repo)
        try:
            if pull:
                self.pull(report)
                self.save()
            if push:
                with contextlib.suppress(_Stop):
                    self.push(report)
        finally:
            self.save()
        return report
