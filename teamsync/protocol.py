"""The writes and state of Claude Code's team memory protocol (docs/design.md §10), served by
`memapp.api.team_memory`.

A PUT is an upsert through the same write path as every other change (`do_put_files`, so it
becomes a commit authored by the token's user). Everything a PUT could be refused for is checked
before anything is written, the project it may create included. A key deleted in memhub and
uploaded again is held as a conflict for review instead of coming back to life: the protocol
client never deletes, so even one that has just fetched the current checksum re-uploads what it
still has. A `MEMORY.md` sent without `If-Match` (by a client that has not seen the team's) is
merged line by line into the store's instead of replacing it (docs/design.md §10).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from django.http import Http404

from memapp.memdir.frontmatter import user_memories
from memapp.memdir.index import merge_index
from memapp.memdir.secret_gate import configure as configure_secret_gate
from memapp.memdir.secret_gate import scan_for_push
from memapp.memdir.secret_rules import SecretHit
from memapp.memdir.store_files import (
    INDEX_FILENAME,
    FileRejected,
    check_entries,
    check_key_neighbours,
    checksum,
    is_index_key,
    read_file,
    read_store,
    store_checksums,
    store_keys,
)
from memapp.stores.actions import do_put_files
from memapp.stores.events import record_event
from memapp.stores.flags import get_flag, get_flags
from memapp.stores.locks import data_dir_lock
from memapp.stores.models import Project, Store
from memapp.stores.projects import (
    find_project,
    managed_store_dir,
    may_create_project,
    no_project_message,
)
from memapp.stores.warm import remembered
from memapp.stores.withheld import withheld as kept_from_agents
from teamsync.engine import keep_entries, without_entries
from teamsync.models import BlockedFile, StoreSyncState, TeamConflict, Tombstone

ORGANIZATION_ID = "memhub"


def store_checksum(entry_checksums: dict[str, str]) -> str:
    """`sha256:` of the sorted `key NUL entry-checksum` pairs, one per line (renames change it)."""
    digest = hashlib.sha256()
    for key in sorted(entry_checksums):
        digest.update(f"{key}\0{entry_checksums[key]}\n".encode())
    return "sha256:" + digest.hexdigest()


def kept_back(store: Store) -> set[str]:
    """The keys team sync keeps out of the shared repository (a secret, a cap, not text):
    teammates do not get them through the protocol either (docs/design.md §10)."""
    if store.pk is None:
        return set()
    return set(BlockedFile.objects.filter(store=store).values_list("key", flat=True))


# (key, checksum of the bytes judged, entropy plugins on) -> whether the push gate's secret
# scan flags them: content-addressed, so a judgment never goes stale; each is made once.
_judged: dict[tuple[str, str, bool], bool] = {}
MAX_JUDGED = 100_000


def _secret_hits(key: str, data: bytes, entropy: bool) -> list[SecretHit]:
    """The push gate's secret scan of `data` as the file `key`, its entropy plugins as given."""
    configure_secret_gate(entropy=entropy)
    return scan_for_push({key: data.decode("utf-8", "replace")}).get(key, [])


def _flagged(key: str, data: bytes, entropy: bool) -> bool:
    """Whether the push gate's secret scan flags `data` as the file `key` (remembered)."""
    judged = (key, checksum(data), entropy)
    flagged = _judged.get(judged)
    if flagged is None:
        flagged = bool(_secret_hits(key, data, entropy))
        if len(_judged) >= MAX_JUDGED:
            _judged.clear()
        _judged[judged] = flagged
    return flagged


def withheld_from_team(
    store: Store, on_disk: dict[str, str], files: dict[str, bytes] | None = None
) -> set[str]:
    """The keys the protocol gives teammates none of: those team sync keeps back
    (:func:`kept_back`), and any the push gate's secret scan flags as they are now. Team sync
    judges a file only when it commits it, so one an agent wrote into the store's directory
    since, or an index line of a file not in the shared repository (which its shared form
    leaves out, but the store's index still holds) would otherwise be served as it is. An
    index is judged in the form it would be served (`files`: the store's files when read)."""
    withheld = kept_back(store)
    entropy = get_flags(store.project)["secrets_entropy_plugins"]
    root = Path(store.path)

    def read(key: str) -> bytes | None:
        try:
            return files[key] if files is not None else (root / key).read_bytes()
        except (KeyError, FileNotFoundError):
            return None

    for key in sorted(k for k in on_disk if k not in withheld and not is_index_key(k)):
        known = _judged.get((key, on_disk[key], entropy))  # judged before: nothing to read
        if known is None and (data := read(key)) is not None:
            known = _flagged(key, data, entropy)
        if known:
            withheld.add(key)
    for key in sorted(k for k in on_disk if k not in withheld and is_index_key(k)):
        data = read(key)
        if data is not None and withheld:
            data = without_entries(key, data, withheld)
        if data is not None and _flagged(key, data, entropy):
            withheld.add(key)
    return withheld


def served_index(store: Store, key: str, data: bytes) -> bytes | None:
    """The index `key` of a team store (its bytes `data`) as memhub gives it to agents, as the
    protocol serves it: without the entries of the files team sync keeps back, and None while
    what is left holds what the push gate's secret scan flags (a line of a file outside the
    shared repository, which team sync never judges). Registered with
    `memapp.stores.withheld`: MCP, the prompt and the session start show it; the files API
    gives the index only while this is the index itself."""
    kept = kept_from_agents(store)
    if key in kept:
        return None
    served = without_entries(key, data, kept) if kept else data
    entropy = get_flags(store.project)["secrets_entropy_plugins"]
    return None if _flagged(key, served, entropy) else served


class IndexForAgents(NamedTuple):
    """How agents get a team store's MEMORY.md against the file: `hits`, the push gate's hits
    (numbered as the file's lines) that keep it from every agent; `trimmed`, whether they get
    it without the entries of files team sync keeps back."""

    hits: list[SecretHit]
    trimmed: bool


def index_for_agents(store: Store) -> IndexForAgents:
    """What :func:`served_index` makes of the team store's MEMORY.md, for its page. Nothing
    when team sync keeps the index itself back (the Team sync page says why)."""
    try:
        data = read_file(Path(store.path) / INDEX_FILENAME)
    except OSError:
        return IndexForAgents([], trimmed=False)
    served = served_index(store, INDEX_FILENAME, data)
    if served is not None:
        return IndexForAgents([], trimmed=served != data)
    if INDEX_FILENAME in kept_from_agents(store):
        return IndexForAgents([], trimmed=False)
    entropy = get_flags(store.project)["secrets_entropy_plugins"]
    return IndexForAgents(_secret_hits(INDEX_FILENAME, data, entropy), trimmed=False)


def entry_checksums(store: Store) -> dict[str, str]:
    """Each entry's checksum as teammates get it (:func:`read_team_entries`)."""
    on_disk = store_checksums(Path(store.path), tuple(store.exclude))
    return _served_checksums(store, on_disk, withheld_from_team(store, on_disk))


def _served_checksums(store: Store, on_disk: dict[str, str], withheld: set[str]) -> dict[str, str]:
    """The checksums of the files as they are (`on_disk`) as teammates get them, without the
    `withheld` files and with each index as it is served."""
    if not withheld:
        return on_disk
    served = {key: value for key, value in on_disk.items() if key not in withheld}
    for key, data in _served_indexes(store, served, withheld).items():
        served[key] = checksum(data)
    return served


def read_team_entries(store: Store) -> dict[str, bytes]:
    """The store's entries as teammates get them: without the files team sync keeps back, and
    each index without their entries, as the shared repository has them."""
    files = read_store(Path(store.path), tuple(store.exclude))
    on_disk = {key: checksum(data) for key, data in files.items()}
    withheld = withheld_from_team(store, on_disk, files)
    if not withheld:
        return files
    served = {key: data for key, data in files.items() if key not in withheld}
    return served | _served_indexes(store, served, withheld, files)


def _served_indexes(
    store: Store, keys: Iterable[str], withheld: set[str], files: dict[str, bytes] | None = None
) -> dict[str, bytes]:
    """The indexes among `keys` without their entries of the `withheld` files (read from the
    store unless `files` holds them)."""
    indexes = {}
    for key in filter(is_index_key, keys):
        try:
            data = files[key] if files is not None else (Path(store.path) / key).read_bytes()
        except FileNotFoundError:
            continue
        indexes[key] = without_entries(key, data, withheld)
    return indexes


class NoTeamMemory(Http404):
    """Why there is no team memory to answer with; `code` tells an agent which case it is:
    ``no_project`` (none the user can reach), ``team_memory_off``, or ``empty`` (nothing yet)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def find_team_store(user, slug: str, *, for_put: bool) -> Store | None:
    """The project's team store; None when a PUT may create it. Raises `NoTeamMemory` for an
    unknown repo, a repo the user is no member of (alike, so nothing leaks), team memory
    switched off, and (GET) a repo without a team store or one the user's first push creates.
    A warm worker answers the membership, the flags and a read's store from what it kept
    (memapp.stores.warm: a change of any of them changes the stamp)."""
    project = find_project(slug)
    if project is None:
        if not (may_create_project(user, slug) and get_flag("team_memory")):
            raise NoTeamMemory("no_project", no_project_message(slug))
        if not for_put:  # the first push creates it
            raise NoTeamMemory("empty", f"memhub has no team memory for {slug} yet.")
    elif not remembered(
        ("member", project.pk, user.pk), lambda: project.members.filter(pk=user.pk).exists()
    ):
        raise NoTeamMemory("no_project", no_project_message(slug))
    elif not get_flags(project)["team_memory"]:
        raise NoTeamMemory("team_memory_off", f"Team memory is switched off for {project}.")
    if for_put and not get_flags(project)["auto_memory"]:
        raise FileRejected(
            "auto_memory_off",
            "Auto memory is turned off for this project: memhub takes no team memory writes "
            "for it (an admin turns it on with the auto_memory flag).",
        )
    if project is None:
        return None
    team_store = project.stores.filter(kind=Store.Kind.TEAM, mount="")
    # A write's store is its own (the rescan after it saves the row): never a kept one.
    store = (
        team_store.first() if for_put else remembered(("team store", project.pk), team_store.first)
    )
    if store is None and not for_put:
        raise NoTeamMemory("empty", f"{project} has no team memory yet.")
    return store


@dataclass(frozen=True)
class TeamMemoryMeta:
    """What every answer of the protocol carries about the team memory."""

    repo: str
    version: int
    last_modified: str  # ISO 8601 in UTC
    checksum: str

    def as_json(self) -> dict[str, object]:
        return {
            "organizationId": ORGANIZATION_ID,
            "repo": self.repo,
            "version": self.version,
            "lastModified": self.last_modified,
            "checksum": self.checksum,
        }


def team_memory_meta(store: Store, sums: dict[str, str]) -> TeamMemoryMeta:
    state = StoreSyncState.objects.get_or_create(store=store)[0]
    return TeamMemoryMeta(
        repo=store.project.repo_slug or store.project.key,
        version=state.version,
        last_modified=state.last_modified.isoformat().replace("+00:00", "Z"),
        checksum=store_checksum(sums),
    )


@dataclass(frozen=True)
class PutOutcome:
    meta: TeamMemoryMeta
    held: list[str]  # keys deleted in memhub, held as conflicts for a person


def _put_lock(slug: str) -> AbstractContextManager[None]:
    """One PUT per repo at a time, so If-Match is checked against what the write replaces."""
    return data_dir_lock(slug, prefix="protocol-")


def do_put_team_memory(
    user, slug: str, uploaded: dict[str, str], if_match: str | None
) -> PutOutcome:
    """Upsert `uploaded` into the team memory of repo `slug` (keys not sent are kept).

    Raises Http404 when the user may not write it, and `FileRejected` with the protocol's code
    when the PUT must not be applied at all: ``precondition_failed`` (`details["checksum"]` is
    the current one), an entry check (``invalid_key``, ``invalid_utf8``, ``binary_content``,
    ``entry_too_large``), ``team_memory_too_many_entries``, ``team_memory_secret_detected``,
    ``team_memory_user_memory`` (a `user` memory, which stays private), or
    ``auto_memory_off`` (the project's auto memory is turned off: memory off means off).
    Nothing is written then, and no project or store created.
    """
    with _put_lock(slug):
        store = find_team_store(user, slug, for_put=True)
        if store is None:  # checked as the store it would be; created once all is well
            project = find_project(slug)
            path = managed_store_dir(project or Project(key=slug), Store.Kind.TEAM)
            store = Store(kind=Store.Kind.TEAM, path=str(path), project=project)
        # One snapshot: the files as they are now, and as the client got them.
        on_disk = store_checksums(Path(store.path), tuple(store.exclude)) if store.pk else {}
        withheld = withheld_from_team(store, on_disk) if store.pk else set()
        sums = _served_checksums(store, on_disk, withheld)
        uploaded = _without_copies_kept_back(uploaded, on_disk, withheld)
        _check_put(store, uploaded, sums, if_match)
        # As do_put_files will, but before a new store is made: a refused PUT creates nothing.
        check_key_neighbours(store_keys(uploaded, on_disk).values(), on_disk)
        if store.pk is None:
            store = _create_team_store(user, slug)
        tombstoned = list(Tombstone.objects.filter(store=store, key__in=list(uploaded)))
        held = {tomb.key for tomb in tombstoned}
        upserts = {k: v for k, v in uploaded.items() if k not in held}
        if if_match is None:
            upserts = _with_team_lines(store, upserts)
        upserts = _with_kept_back_lines(store, upserts, withheld)
        # Per-key preconditions too, checked under the store's own lock: a UI or API write
        # that lands after the snapshot is not overwritten.
        expected = {k: on_disk[k] for k in upserts if k in on_disk}
        try:
            do_put_files(store, user, upserts, if_match=expected, via="protocol")
        except FileRejected as exc:
            raise _as_protocol_refusal(exc, store) from None
        _hold_resurrections(store, user, tombstoned, uploaded)
        return PutOutcome(team_memory_meta(store, entry_checksums(store)), sorted(held))


def _with_team_lines(store: Store, upserts: dict[str, str]) -> dict[str, str]:
    """`upserts` with each index merged into the store's by `merge_index`: a client that sent
    no `If-Match` has not seen the team's index, so its file adds its lines (and nothing it
    lacks is taken away); an index it sent knowing the current one is taken as it is."""
    merged = dict(upserts)
    for key, text in upserts.items():
        if not is_index_key(key):
            continue
        try:
            current = (Path(store.path) / key).read_bytes().decode("utf-8", "surrogateescape")
        except FileNotFoundError:
            continue
        merged[key] = merge_index("", text, current)
    return merged


def _without_copies_kept_back(
    uploaded: dict[str, str], on_disk: dict[str, str], withheld: set[str]
) -> dict[str, str]:
    """`uploaded` without the `withheld` files (team sync keeps them back) that the client
    sends as they are here: a client that got one before it was kept back (or before this
    server withheld them) sends it again at every push, since the GET no longer lists it; its
    secret would refuse the whole PUT, the client's other changes with it."""
    return {
        key: text
        for key, text in uploaded.items()
        if key not in withheld
        or on_disk.get(key) != checksum(text.encode("utf-8", "surrogateescape"))
    }


def _with_kept_back_lines(
    store: Store, upserts: dict[str, str], withheld: set[str]
) -> dict[str, str]:
    """`upserts` with each index keeping the store's entries of the `withheld` files (team
    sync keeps them back): the client never got them (:func:`read_team_entries`), so it cannot
    have meant to take them away."""
    if not withheld:
        return upserts
    kept = dict(upserts)
    for key, text in upserts.items():
        if not is_index_key(key):
            continue
        try:
            current = (Path(store.path) / key).read_bytes()
        except FileNotFoundError:
            continue
        data = text.encode("utf-8", "surrogateescape")
        kept[key] = keep_entries(key, data, current, withheld).decode("utf-8", "surrogateescape")
    return kept


def _stale(store: Store) -> FileRejected:
    current = store_checksum(entry_checksums(store)) if store.pk else store_checksum({})
    return FileRejected(
        "precondition_failed",
        "The team memory changed; fetch it again.",
        {"checksum": current},
    )


def _as_protocol_refusal(exc: FileRejected, store: Store) -> FileRejected:
    if exc.code == "precondition_failed":
        return _stale(store)
    if exc.code == "secret_detected":
        return FileRejected("team_memory_secret_detected", "Refused: secrets found.", exc.details)
    return exc


def _check_put(
    store: Store, uploaded: dict[str, str], sums: dict[str, str], if_match: str | None
) -> None:
    """Raise `FileRejected` when the PUT must not be applied at all."""
    if if_match is not None and if_match != store_checksum(sums):
        raise _stale(store)
    flags = get_flags(store.project)
    try:
        check_entries(
            uploaded,
            exclude=store.exclude,
            max_bytes=flags["team_max_entry_bytes"],
            secrets=False,  # both layers, below, once the counts are known
        )
    except FileRejected as exc:
        raise _as_protocol_refusal(exc, store) from None
    topics = [k for k in set(sums) | set(uploaded) if not is_index_key(k)]
    if len(topics) > flags["team_max_entries"]:
        raise FileRejected(
            "team_memory_too_many_entries",
            "Too many team memory entries.",
            {"max_entries": flags["team_max_entries"], "received_entries": len(topics)},
        )
    personal = user_memories({k: v for k, v in uploaded.items() if not is_index_key(k)})
    if personal:  # a protocol client has no box to tick: the rule refuses it
        raise FileRejected(
            "team_memory_user_memory",
            "Refused: user memories are private and never go into team memory.",
            {"entries": [{"key": key, "rule": "user_memory_private"} for key in personal]},
        )
    # Both layers of docs/design.md §10a: what the protocol accepts is served to every member at
    # once, so a file the push gate would quarantine must not get in either.
    configure_secret_gate(entropy=flags["secrets_entropy_plugins"])
    blocked = scan_for_push(uploaded)
    if blocked:
        hits = [
            {"key": key, "rule_id": hit.rule_id, "label": hit.label, "line": hit.line}
            for key in sorted(blocked)
            for hit in blocked[key]
        ]
        raise FileRejected(
            "team_memory_secret_detected", "Refused: secrets found.", {"entries": hits}
        )


def _create_team_store(user, slug: str) -> Store:
    """The managed team store a PUT writes to, with its project (the user as first member)
    when memhub does not know the repo yet."""
    project = find_project(slug)
    if project is None:
        project = Project.objects.create(key=slug, repo_slug=slug)
        project.members.add(user)
    path = managed_store_dir(project, Store.Kind.TEAM)
    path.mkdir(parents=True, exist_ok=True)
    return Store.objects.create(
        kind=Store.Kind.TEAM, origin=Store.Origin.MANAGED, path=str(path), project=project
    )


def _hold_resurrections(
    store: Store, user, tombstones: list[Tombstone], uploaded: dict[str, str]
) -> None:
    """Keys deleted in memhub that a client sends again: each is held as an open `resurrect`
    conflict (updated with the latest text) for a person to resolve; a text the person already
    refused is held without asking again. Resolving it with the client's text commits the key,
    which removes its tombstone."""
    for tomb in tombstones:
        text = uploaded[tomb.key]
        conflicts = TeamConflict.objects.filter(
            store=store, key=tomb.key, kind=TeamConflict.Kind.RESURRECT
        )
        open_conflict = conflicts.filter(resolved_at__isnull=True).first()
        if open_conflict is not None:
            if open_conflict.theirs != text:
                open_conflict.theirs = text
                open_conflict.save(update_fields=["theirs"])
            continue
        if conflicts.filter(resolved_at__gte=tomb.deleted_at, theirs=text).exists():
            continue
        TeamConflict.objects.create(
            store=store, key=tomb.key, kind=TeamConflict.Kind.RESURRECT, ours=None, theirs=text
        )
        record_event("conflict", store=store, user=user, path=tomb.key, reason="resurrect")
