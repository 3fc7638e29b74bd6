"""Keeping the database mirror in step with the directories on disk (docs/design.md §1, §20).

Disk is the truth. A rescan stats every file (the core's scan cache makes an unchanged file cost
one stat), re-reads only files whose mtime, size or ctime changed (a rewrite that kept the
mtime, as a client's upload does, still changes the ctime), and drops rows of files that are
gone. It never writes to the store's directory, and reads through the store's one reader
(:func:`memapp.memdir.store_files.read_file`), so bytes, mtimes and atimes stay as they were.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from django.db import transaction
from django.utils import timezone

from memapp.memdir.frontmatter import Memory, decode_bytes, parse_memory
from memapp.memdir.index import INDEX_FILENAME, index_health
from memapp.memdir.lint import link_targets, missing_why_how, relative_dates, unknown_links
from memapp.memdir.scan import KnownFile, MemoryHeader, StoreScan, header_of, scan_store
from memapp.memdir.store_files import CHECKSUM_PREFIX, FileKind, checksum, classify, read_file
from memapp.stores.bulk import insert_rows
from memapp.stores.history import record_found_on_disk
from memapp.stores.models import MemoryFile, Store

MAX_BODY_CHARS = 256 * 1024  # kept for search; a 10 MB file is still mirrored, its body capped


class RescanResult(NamedTuple):
    added: int
    changed: int
    removed: int
    unchanged: int


# A mirror row's columns: the store, the path and the stamps, what `_fields` reads from the
# file (in its order), then the two that depend on other files.
_COLUMNS = (
    "store_id", "path", "size", "mtime_ms", "ctime_ns", "name", "description", "type", "type_form",
    "sha256",
    "links", "problem", "body", "missing_sections", "relative_dates", "in_index", "dangling_links",
)  # fmt: skip


class Parsed(NamedTuple):
    """A topic file a writer is about to write, as the mirror reads it (see `parse_written`)."""

    header: MemoryHeader  # mtime 0: set from the write's stat
    fields: tuple


def parse_written(store: Store, contents: Mapping[str, bytes]) -> dict[str, Parsed]:
    """The topic files among `contents` (key -> the bytes a writer writes into `store`) as
    a rescan would read them: parsed while the writes wait on the disk, so that the rescan
    after them (`rescan_store(store, written=...)`) reads and parses none of them again."""
    topics = [key for key in contents if classify(key, store.exclude) is FileKind.TOPIC]
    parsed = {}
    for key in topics:
        header = header_of(key, contents[key])
        parsed[key] = Parsed(header, _fields(header, contents[key], header.problem or ""))
    return parsed


def _read_fields(root: Path, header: MemoryHeader, contents: dict[str, bytes]) -> tuple:
    """`_fields` of one file, from one full read of it (its bytes are left in `contents`, for
    its history)."""
    try:
        data = read_file(root / header.path)
    except OSError as exc:
        data, problem = b"", f"unreadable: {exc.strerror or exc}"
    else:
        problem = header.problem or ""
        contents[header.path] = data
    return _fields(header, data, problem)


def _fields(header: MemoryHeader, data: bytes, problem: str) -> tuple:
    """What the mirror keeps of a file's content (`_COLUMNS` from name to relative_dates);
    `problem`: why it could not be read, else the header's."""
    memory = _memory(header, data)
    body = "" if b"\0" in data[:8192] else memory.body[:MAX_BODY_CHARS]
    memory_type = memory.type or ""
    return (
        memory.name or "",
        memory.description or "",
        memory_type,
        memory.type_form or "",
        checksum(data).removeprefix(CHECKSUM_PREFIX),
        list(memory.links),
        # The whole file's problems (the header's among them), else why it could not be read.
        memory.problem or problem,
        body,
        missing_why_how(memory_type, body),
        relative_dates(body) if memory_type == "project" else [],
    )


def _memory(header: MemoryHeader, data: bytes) -> Memory:
    """The file as :func:`parse_memory` reads it; its header taken from the scan's when that
    parsed cleanly and the file still has the size the scan saw (the YAML is not parsed twice)."""
    if header.has_frontmatter and header.problem is None and len(data) == header.size:
        text, problem = decode_bytes(data)
        if problem is None:
            return Memory(
                name=header.name,
                description=header.description,
                type=header.type,
                body=text[header.body_start :],
                type_form=header.type_form,
                has_frontmatter=True,
                path=header.path,
            )
    return parse_memory(data, path=header.path)


def rescan_store(
    store: Store, written: Mapping[str, tuple[Parsed, os.stat_result]] | None = None
) -> RescanResult:
    """Bring the store's mirror rows and index stats up to date with its directory.

    `written`: topic files a writer just wrote and recorded in the history itself, each as
    `parse_written` read it and with the stat its write left. While a file still is as
    written, it is neither read nor parsed again, nor looked for in its history; the rows
    are those a rescan reading every file would leave."""
    root = Path(store.path)
    written = written or {}
    known = {key: KnownFile.written(p.header, st) for key, (p, st) in written.items()}
    scan = scan_store(root, exclude=tuple(store.exclude), known=known)
    headers = scan.ordered
    signature = _index_signature(root)
    seen = _last_rescan.get(store.pk)
    if (
        seen is not None
        and seen[0] is scan
        and seen[1] == store.scanned_at
        and store.index_stats.get("signature") == signature
    ):
        # This process mirrored this very scan last time (the scan cache answers with the same
        # object while no file changed) and nobody rescanned since (the scan time would
        # differ): the rows are current, so skip reading them back.
        return _touch(store, scan, len(headers))
    existing = {
        row["path"]: row
        for row in store.files.values(
            "pk", "path", "mtime_ms", "ctime_ns", "size", "in_index", "dangling_links"
        )
    }
    added: list[tuple] = []
    changed: list[tuple] = []
    unchanged = 0
    contents: dict[str, bytes] = {}
    for header in headers:
        row = existing.pop(header.path, None)
        if (
            row is not None
            and row["ctime_ns"] == header.ctime_ns
            and row["mtime_ms"] == header.mtime_ms
            and row["size"] == header.size
        ):
            unchanged += 1
            continue
        path = header.path
        if path in known and header is known[path].header:  # the scan found it as written
            fields = written[path][0].fields
        else:
            fields = _read_fields(root, header, contents)
        stamped = (store.pk, path, header.size, header.mtime_ms, header.ctime_ns, *fields)
        if row is None:
            added.append((*stamped, False, []))
        else:  # in_index and dangling_links as they were: refreshed below with the rest
            changed.append((row["pk"], *stamped, row["in_index"], row["dangling_links"]))
    files_changed = bool(added or changed or existing)
    if not files_changed and store.index_stats.get("signature") == signature:
        # Nothing on disk moved: the index stats and cross-file flags still hold.
        return _touch(store, scan, unchanged)
    health = index_health(root, files=[h.path for h in headers])
    indexed = {h.path for h in headers} - set(health.unindexed)
    with transaction.atomic():
        # A changed row is replaced whole (same pk): bulk_update's CASE per field and row takes
        # seconds for a thousand rows, one DELETE and one INSERT milliseconds.
        gone = [row["pk"] for row in existing.values()] + [row[0] for row in changed]
        if gone:
            MemoryFile.objects.filter(pk__in=gone).delete()
        insert_rows(MemoryFile, ("id", *_COLUMNS), changed)
        insert_rows(MemoryFile, _COLUMNS, added)
        gone_paths = list(existing)
        if store.index_stats.get("signature") != signature:  # MEMORY.md changed: a version too
            index = _read_index(root)
            if index is None:
                gone_paths.append(INDEX_FILENAME)
            else:
                contents[INDEX_FILENAME] = index
        record_found_on_disk(store, contents, gone_paths)
        _refresh_cross_file_flags(store, indexed)
        store.file_count = len(headers)
        store.scanned_at = timezone.now()
        store.index_stats = {
            "exists": health.exists,
            "lines": health.line_count,
            "bytes": health.byte_count,
            "max_lines": health.max_lines,
            "max_bytes": health.max_bytes,
            "truncated_lines": health.was_line_truncated,
            "truncated_bytes": health.was_byte_truncated,
            "missing_targets": len(health.missing_targets),
            "unindexed": len(health.unindexed),
            "long_entries": len(health.long_entries),
            "signature": signature,
        }
        store.save(update_fields=["file_count", "scanned_at", "index_stats"])
    _last_rescan[store.pk] = (scan, store.scanned_at)
    return RescanResult(len(added), len(changed), len(existing), unchanged)


# store id -> (the scan mirrored and the scan time) of this process's last rescan.
_last_rescan: dict[int, tuple[StoreScan, object]] = {}


def _touch(store: Store, scan: StoreScan, unchanged: int) -> RescanResult:
    """Record a rescan that found nothing new."""
    store.scanned_at = timezone.now()
    store.save(update_fields=["scanned_at"])
    _last_rescan[store.pk] = (scan, store.scanned_at)
    return RescanResult(0, 0, 0, unchanged)


def _read_index(root: Path) -> bytes | None:
    try:
        return read_file(root / INDEX_FILENAME)
    except OSError:
        return None


def _index_signature(root: Path) -> list[int] | None:
    """MEMORY.md's mtime and size: when they and the files are unchanged, so are the flags."""
    try:
        st = (root / INDEX_FILENAME).stat()
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _refresh_cross_file_flags(store: Store, indexed: set[str]) -> None:
    """`in_index` and `dangling_links` depend on other files, so they are recomputed together
    (from plain rows: at 20,000 files, building model instances cost more than the rest)."""
    rows = list(
        store.files.values_list("pk", "path", "name", "links", "in_index", "dangling_links")
    )
    targets = link_targets((path, name) for _, path, name, *_ in rows)
    # One UPDATE per distinct value (mostly one or two), not bulk_update's CASE per row.
    by_value: dict[tuple[bool, tuple[str, ...]], list[int]] = defaultdict(list)
    for pk, path, _name, links, was_in_index, was_dangling in rows:
        in_index = path in indexed
        dangling = unknown_links(links, targets)
        if in_index != was_in_index or dangling != was_dangling:
            by_value[(in_index, tuple(dangling))].append(pk)
    for (in_index, dangling), pks in by_value.items():
        MemoryFile.objects.filter(pk__in=pks).update(
            in_index=in_index, dangling_links=list(dangling)
        )
