"""Every version of every memory, and the trash (docs/design.md §23).

A version is recorded by whoever changes a topic file or the store's MEMORY.md: memhub's own
writes (`actions.py`, team sync's pull and conflict resolutions, snapshot decisions), with who and
through what, before the mirror is rescanned; and
the mirror itself for what it finds changed on disk. The mirror records only what no writer
recorded first: a file whose checksum differs from its latest version. Bytes are kept once per
distinct checksum (`Blob`).

A deleted file goes to the trash (a row pointing at its last bytes) and stays restorable until
`MEMHUB_TRASH_DAYS` have passed; pruning then drops it with the history that led up to it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from memapp.memdir.frontmatter import parse_memory
from memapp.memdir.index import INDEX_FILENAME, parse_index_entries, read_index
from memapp.memdir.keys import PathTraversalError, validate_key
from memapp.memdir.store_files import FileKind, classify
from memapp.stores.bulk import insert_rows
from memapp.stores.models import Blob, MemoryVersion, Store, TrashItem, Via

BATCH = 500
FIRST_SEEN = "first seen"
DELETED_ON_DISK = "deleted on disk"
_VERSION_COLUMNS = ("store_id", "path", "sha256", "size", "via", "user_id", "note", "index_line")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_topic(path: str) -> bool:
    """A topic file (the file rule's, docs/design.md §6a), not an index."""
    return classify(path) is FileKind.TOPIC


def is_versioned(path: str) -> bool:
    """Versions are kept of topic files and of the store's own MEMORY.md, which agents load
    every session: it is a memory like any other (docs/design.md §23). Indexes of
    subdirectories are not the store's index."""
    return path == INDEX_FILENAME or is_topic(path)


def _chunks(items: list, size: int = BATCH):
    for start in range(0, len(items), size):
        yield items[start : start + size]


def index_lines(root: Path | str, paths: Iterable[str] | None = None) -> dict[str, str]:
    """The MEMORY.md line of each file that has one (the first, as edits treat it); of every
    file, or of `paths`."""
    wanted = None if paths is None else set(paths)
    lines: dict[str, str] = {}
    for entry in parse_index_entries(read_index(root)):
        if entry.path and (wanted is None or entry.path in wanted):
            lines.setdefault(entry.path, entry.raw)
    return lines


def latest_checksums(store: Store, paths: Iterable[str]) -> dict[str, str]:
    """Each path's latest version checksum ("" when its latest version is a deletion); paths
    with no version are missing from the answer."""
    paths = list(paths)
    if not paths or (len(paths) > BATCH and not store.versions.exists()):
        return {}  # a store seen for the first time: one query instead of one per batch
    latest: dict[str, tuple[int, str]] = {}
    for chunk in _chunks(paths):
        rows = store.versions.filter(path__in=chunk).values_list("path", "id", "sha256")
        for path, pk, sha in rows:
            if path not in latest or pk > latest[path][0]:
                latest[path] = (pk, sha)
    return {path: sha for path, (_, sha) in latest.items()}


def _save_blobs(blobs: Mapping[str, bytes]) -> None:
    """The bytes of each checksum in `blobs`, unless kept already."""
    rows = [(sha, data, len(data)) for sha, data in blobs.items()]
    insert_rows(Blob, ("sha256", "data", "size"), rows, ignore_conflicts=True)


def _describe(data: bytes, path: str) -> tuple[str, str]:
    memory = parse_memory(data, path=path)
    return (memory.name or "")[:1000], memory.description or ""


@transaction.atomic
def record_changes(
    store: Store,
    written: Mapping[str, bytes],
    deleted: Mapping[str, bytes | None] | None = None,
    *,
    via: str,
    user=None,
    note: str = "",
    index_lines: Mapping[str, str] | None = None,
) -> None:
    """Record what a writer just did to `store`: a version per written topic file, and per
    deleted one a deletion and a trash item holding its last bytes (`None`: the bytes of its
    latest version, when there is one). `index_lines` are the files' MEMORY.md lines, kept
    with the version (and the trash item) so a restore brings its line back too."""
    index_lines = index_lines or {}
    written = {p: d for p, d in written.items() if is_versioned(p)}
    deleted = {p: d for p, d in (deleted or {}).items() if is_versioned(p)}
    if not written and not deleted:
        return
    shas = {path: sha256_hex(data) for path, data in written.items()}
    gone = {path: sha256_hex(data) for path, data in deleted.items() if data is not None}
    blobs = {shas[path]: data for path, data in written.items()}
    blobs.update((gone[path], deleted[path]) for path in gone)
    _save_blobs(blobs)
    known = latest_checksums(store, [p for p, d in deleted.items() if d is None])
    who = (via, user.pk if user else None, note[:300])
    versions = [
        (store.pk, path, sha, len(written[path]), *who, index_lines.get(path, ""))
        for path, sha in shas.items()
    ]
    insert_rows(MemoryVersion, _VERSION_COLUMNS, versions)
    for path, data in deleted.items():
        sha = gone[path] if data is not None else known.get(path, "")
        _trash(store, path, sha, data, via=via, user=user, note=note, line=index_lines.get(path))


def _trash(store, path, sha, data, *, via, user, note, line) -> None:
    version = MemoryVersion.objects.create(
        store=store, path=path, sha256="", via=via, user=user, note=note[:300]
    )
    if not sha or path == INDEX_FILENAME:
        return  # never seen with content; an index is restored from its history, not the trash
    blob = Blob.objects.filter(sha256=sha).first()
    if blob is None:
        return
    content = bytes(blob.data) if data is None else data
    name, description = _describe(content, path)
    TrashItem.objects.create(
        store=store,
        path=path,
        sha256=sha,
        size=len(content),
        name=name,
        description=description,
        index_line=line or "",
        via=via,
        deleted_by=user,
        version=version,
    )


def _record_disk(store: Store, seen: Mapping[str, bytes], latest: Mapping[str, str]) -> int:
    """Versions "found on disk" of the files whose bytes no version has yet."""
    changed = {p: d for p, d in seen.items() if latest.get(p) != sha256_hex(d)}
    if not changed:
        return 0
    lines = index_lines(store.path, changed)
    first = {p: d for p, d in changed.items() if p not in latest}
    again = {p: d for p, d in changed.items() if p in latest}
    if first:
        record_changes(store, first, via=Via.DISK, note=FIRST_SEEN, index_lines=lines)
    if again:
        record_changes(store, again, via=Via.DISK, index_lines=lines)
    return len(changed)


def record_found_on_disk(store: Store, seen: Mapping[str, bytes], gone: Iterable[str]) -> int:
    """The mirror's part: a version for each file whose bytes differ from its latest version
    (its first version when it has none), and a deletion for each file gone from disk whose
    latest version is not one already. Returns how many versions were recorded."""
    gone = [p for p in gone if is_versioned(p)]
    seen = {p: d for p, d in seen.items() if is_versioned(p)}
    latest = latest_checksums(store, [*seen, *gone])
    removed = {p: None for p in gone if latest.get(p)}
    if removed:
        lines = _last_lines(store, removed)
        record_changes(store, {}, removed, via=Via.DISK, note=DELETED_ON_DISK, index_lines=lines)
    return _record_disk(store, seen, latest) + len(removed)


def _last_lines(store: Store, paths: Iterable[str]) -> dict[str, str]:
    """The MEMORY.md lines the latest versions of `paths` had (the index may have lost them
    with the file)."""
    lines: dict[str, tuple[int, str]] = {}
    for chunk in _chunks(list(paths)):
        rows = store.versions.filter(path__in=chunk).exclude(index_line="")
        for path, pk, line in rows.values_list("path", "id", "index_line"):
            if path not in lines or pk > lines[path][0]:
                lines[path] = (pk, line)
    return {path: line for path, (_, line) in lines.items()}


def capture_before_write(store: Store, paths: Iterable[str]) -> None:
    """Record the bytes on disk now of files a writer is about to overwrite or delete, when no
    version has them yet (an agent wrote them since the last rescan): nothing is lost."""
    seen = {}
    for path in paths:
        if not is_versioned(path):
            continue
        try:
            seen[path] = validate_key(Path(store.path), path).read_bytes()
        except (OSError, PathTraversalError):
            continue
    if seen:
        _record_disk(store, seen, latest_checksums(store, seen))


def read_index_bytes(store: Store) -> bytes | None:
    try:
        return (Path(store.path) / INDEX_FILENAME).read_bytes()
    except FileNotFoundError:
        return None


def record_index(
    store: Store, before: bytes | None, *, via: str, user=None, note: str = ""
) -> None:
    """Record the store's MEMORY.md as a writer left it, when it is not `before` (its bytes
    before the write, `capture_before_write` having kept them): who changed the index and how."""
    after = read_index_bytes(store)
    if after == before:
        return
    if after is None:
        record_changes(store, {}, {INDEX_FILENAME: before}, via=via, user=user, note=note)
    else:
        record_changes(store, {INDEX_FILENAME: after}, via=via, user=user, note=note)


def blob_bytes(sha256: str) -> bytes | None:
    blob = Blob.objects.filter(sha256=sha256).first()
    return None if blob is None else bytes(blob.data)


def timeline(store: Store, path: str):
    """The versions of one file, newest first."""
    return store.versions.filter(path=path).select_related("user").order_by("-id")


def trash_expires_at(item: TrashItem, days: int):
    return item.deleted_at + timedelta(days=days)


def prune_trash(days: int, now=None) -> int:
    """Drop trash items older than `days` days with the history up to their deletion, and the
    bytes nothing refers to any more; returns how many items went."""
    now = timezone.now() if now is None else now
    old = list(TrashItem.objects.filter(deleted_at__lt=now - timedelta(days=days)))
    for item in old:
        with transaction.atomic():
            if item.version_id is not None:
                MemoryVersion.objects.filter(
                    store_id=item.store_id, path=item.path, id__lte=item.version_id
                ).delete()
            item.delete()
    prune_blobs()
    return len(old)


def prune_blobs() -> int:
    """Delete the bytes no version and no trash item refers to (pruned history, removed
    stores)."""
    referenced = MemoryVersion.objects.exclude(sha256="").values("sha256")
    in_trash = TrashItem.objects.values("sha256")
    deleted, _ = Blob.objects.exclude(sha256__in=referenced).exclude(sha256__in=in_trash).delete()
    return deleted
