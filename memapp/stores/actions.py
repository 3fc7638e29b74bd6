"""Writes to memory stores. Each is one verb-first function: disk first, atomically, then the
mirror, then an event. Views and the API only call these."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from pathlib import Path

from memapp.memdir.atomic import delete_file, write_atomic
from memapp.memdir.frontmatter import Memory, parse_memory, render_memory
from memapp.memdir.index import (
    INDEX_FILENAME,
    delete_index_entry,
    format_index_entry,
    index_health,
    write_index_entry,
)
from memapp.memdir.scan import detect_type_form
from memapp.memdir.store_files import (
    FileRejected,
    check_entries,
    check_entry,
    checksum,
    entry_path,
)
from memapp.stores.changes import announce_change
from memapp.stores.events import record_event
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import MemoryFile, Store


class EditConflict(Exception):
    """The file changed on disk since the form was opened; nothing was written."""

    def __init__(self, path: str, disk_text: str, disk_sha256: str) -> None:
        super().__init__(f"{path} changed on disk since it was opened")
        self.path, self.disk_text, self.disk_sha256 = path, disk_text, disk_sha256


def store_file_path(store: Store, key: str) -> Path:
    """The path of a memory file of the store: the file rule of docs/design.md §6a (safe key,
    a memory file, not inside a store of its own); `FileRejected` otherwise."""
    return entry_path(store.path, key, store.exclude)


def _current_checksum(path: Path) -> str | None:
    try:
        return checksum(path.read_bytes())
    except FileNotFoundError:
        return None


def _slug(text: str, sep: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", sep, ascii_text.lower()).strip(sep)[:60] or "memory"


def new_memory_path(root: Path, name: str, memory_type: str | None, form: str) -> str:
    """A file name in the directory's own style: `<slug>.md` for newer clients (type under
    `metadata:`), `<type>_<words>.md` otherwise; never an existing file."""
    if form == "metadata":
        stem = _slug(name, "-")
    else:
        stem = _slug(name, "_")
        if memory_type:
            stem = f"{memory_type}_{stem}"
    candidate, n = f"{stem}.md", 2
    while (root / candidate).exists():
        candidate, n = f"{stem}-{n}.md", n + 1
    return candidate


def do_save_memory(
    store: Store,
    user,
    *,
    name: str,
    description: str,
    memory_type: str | None,
    body: str,
    path: str | None = None,
    base_sha256: str | None = None,
    via: str = "ui",
) -> MemoryFile:
    """Create (path None) or update a topic file and its MEMORY.md line.

    An update whose `base_sha256` (the file's `checksum` when the form was opened) no longer
    matches the file on disk raises EditConflict and writes nothing, so an edit never
    overwrites a change made behind the form's back.
    """
    root = Path(store.path)
    with store_lock(store):
        created = path is None
        if created:
            form = detect_type_form(str(root))
            path = new_memory_path(root, name, memory_type, form)
            previous = Memory(type_form=form, has_frontmatter=True)
        target = store_file_path(store, path)
        if not created:
            data = target.read_bytes()
            if base_sha256 is not None and checksum(data) != base_sha256:
                raise EditConflict(path, data.decode("utf-8", "replace"), checksum(data))
            previous = parse_memory(data, path=path)
        # replace() keeps the file's other keys and its problem: render_memory refuses a file
        # whose header is not closed within 30 lines rather than adding a second header.
        memory = replace(
            previous,
            name=name,
            description=description,
            type=memory_type,
            body=body,
            type_form=previous.type_form or "top",
            path=path,
        )
        text = check_entry(path, render_memory(memory), exclude=store.exclude)
        write_atomic(target, text)
        write_index_entry(root, path, format_index_entry(name, path, description))
        rescan_store(store)
    announce_change(store, user, {path, INDEX_FILENAME})
    record_event("memory_written", store=store, user=user, path=path, via=via, created=created)
    return store.files.get(path=path)


def do_forget_memory(store: Store, user, path: str, via: str = "ui") -> None:
    """Delete a topic file and its MEMORY.md line; the mirror follows."""
    root = Path(store.path)
    with store_lock(store):
        target = store_file_path(store, path)
        delete_file(target, missing_ok=True)
        delete_index_entry(root, path)
        rescan_store(store)
    announce_change(store, user, {path, INDEX_FILENAME})
    record_event("memory_forgotten", store=store, user=user, path=path, via=via)


def do_rebuild_index_entries(store: Store, user) -> list[str]:
    """Add a MEMORY.md line for each topic file missing from it; existing lines stay as they are."""
    root = Path(store.path)
    with store_lock(store):
        health = index_health(root, exclude=tuple(store.exclude))
        files = {f.path: f for f in store.files.filter(path__in=health.unindexed)}
        for path in health.unindexed:
            file = files.get(path)
            title = file.title if file else path.removesuffix(".md")
            hook = file.description if file else ""
            write_index_entry(root, path, format_index_entry(title, path, hook))
        rescan_store(store)
    announce_change(store, user, {INDEX_FILENAME})
    return list(health.unindexed)


def do_put_files(
    store: Store,
    user,
    files: dict[str, str],
    *,
    delete: tuple[str, ...] = (),
    if_match: dict[str, str | None] | None = None,
    via: str = "api",
) -> dict[str, list[str]]:
    """Write several files at once: all are checked first (keys, sizes, UTF-8, secrets,
    preconditions) and nothing is written unless every one passes. Files whose content is
    already on disk are left alone (their mtime too)."""
    if_match = if_match or {}
    paths = {key: store_file_path(store, key) for key in [*files, *delete]}
    encoded = {
        key: text.encode("utf-8")
        for key, text in check_entries(files, exclude=store.exclude).items()
    }
    result: dict[str, list[str]] = {"written": [], "unchanged": [], "deleted": []}
    with store_lock(store):
        for key, expected in if_match.items():
            current = _current_checksum(paths[key])
            if expected is not None and current != expected:
                raise FileRejected(
                    "precondition_failed",
                    f"{key!r} changed on the server (If-Match does not match)",
                    {"key": key, "checksum": current},
                )
        created = set()
        for key, data in encoded.items():
            current = _current_checksum(paths[key])
            if current == checksum(data):
                result["unchanged"].append(key)
                continue
            if current is None:
                created.add(key)
            paths[key].parent.mkdir(parents=True, exist_ok=True)
            write_atomic(paths[key], data.decode("utf-8"))
            result["written"].append(key)
        for key in delete:
            if delete_file(paths[key], missing_ok=True):
                result["deleted"].append(key)
        if result["written"] or result["deleted"]:
            rescan_store(store)
    if result["written"] or result["deleted"]:
        announce_change(store, user, set(result["written"] + result["deleted"]))
    for key in result["written"]:
        record_event(
            "memory_written", store=store, user=user, path=key, via=via, created=key in created
        )
    for key in result["deleted"]:
        record_event("memory_forgotten", store=store, user=user, path=key, via=via)
    return result
