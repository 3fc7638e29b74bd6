"""Writes to memory stores. Each is one verb-first function: disk first, atomically, then the
mirror, then an event. Views and the API only call these."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Collection, Mapping
from contextlib import suppress
from dataclasses import replace
from pathlib import Path

from memapp.memdir.atomic import delete_file, keep_mtime, write_atomic, write_atomic_bytes
from memapp.memdir.frontmatter import Memory, parse_memory, render_memory, user_memories
from memapp.memdir.index import (
    INDEX_FILENAME,
    delete_index_entry,
    format_index_entry,
    index_health,
    is_linkable,
    with_index_entry,
    write_index_entry,
)
from memapp.memdir.keys import fold_key
from memapp.memdir.scan import detect_type_form
from memapp.memdir.secret_gate import configure as configure_secret_gate
from memapp.memdir.secret_gate import scan_for_push
from memapp.memdir.secret_rules import place, scan_text
from memapp.memdir.store_files import (
    FileRejected,
    check_entries,
    check_entry,
    check_key_neighbours,
    checksum,
    entry_path,
    normalize_key,
    store_keys,
    walk_store,
)
from memapp.stores.changes import announce_change
from memapp.stores.events import record_event
from memapp.stores.flags import get_flags
from memapp.stores.history import (
    blob_bytes,
    capture_before_write,
    index_lines,
    read_index_bytes,
    record_changes,
    record_index,
)
from memapp.stores.locks import store_lock
from memapp.stores.mirror import rescan_store
from memapp.stores.models import MemoryFile, MemoryVersion, Store, TrashItem, Via
from memapp.stores.prompting import team_store_for


class EditConflict(Exception):
    """The file changed on disk since the form was opened; nothing was written."""

    def __init__(self, path: str, disk_text: str, disk_sha256: str) -> None:
        super().__init__(f"{path} changed on disk since it was opened")
        self.path, self.disk_text, self.disk_sha256 = path, disk_text, disk_sha256


READ_ONLY = (
    "Codex CLI generates these files itself and rewrites them from its threads, so memhub "
    "mirrors them read-only: change what Codex remembers in Codex (/memories), and keep what "
    "your agents should recall in memhub's memory of the project."
)


def check_writable(store: Store) -> None:
    """Refuse any write to a read-only store (docs/design.md §28) before anything is done."""
    if store.read_only:
        raise FileRejected("read_only", READ_ONLY, {"store": store.pk})


def store_file_path(store: Store, key: str) -> Path:
    """The path of a memory file of the store: the file rule of docs/design.md §6a (safe key,
    a memory file, not inside a store of its own); `FileRejected` otherwise."""
    return entry_path(store.path, key, store.exclude)


def check_new_key(store: Store, key: str, *, replacing: Collection[str] = ()) -> None:
    """`FileRejected` when a new file `key` (in NFC) would be one with another of the store on
    macOS or Windows, or lie under a file; `replacing` are keys the same change deletes (a
    case-only rename's old name is no neighbour)."""
    on_disk = {f.key for f in walk_store(store.path, store.exclude)}
    check_key_neighbours([key], on_disk - set(replacing))


ODD_NAME = (
    "Its name holds a backslash, which Windows reads as a folder separator, so memhub keeps "
    "no memory under such a name: read it and forget it here; restored from the trash, it "
    "comes back with a dash instead."
)


def listed_file_path(store: Store, key: str) -> Path:
    """`store_file_path`, but also a file the mirror lists whose name holds a backslash (a
    plain character on Linux and macOS, where an agent made it): a person can read and forget
    it (docs/design.md §4). Its folders must still lie inside the store, no symlink on it."""
    try:
        return store_file_path(store, key)
    except FileRejected as exc:
        if exc.details.get("rule") != "backslash" or not store.files.filter(path=key).exists():
            raise
        path = Path(store.path).joinpath(*key.split("/"))
        inside = path.parent.resolve().is_relative_to(Path(store.path).resolve())
        if not inside or path.is_symlink() or {".", "..", ""} & set(key.split("/")):
            raise
        return path


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
    `metadata:`), `<type>_<words>.md` otherwise; never an existing file nor its look-alike."""
    if form == "metadata":
        stem = _slug(name, "-")
    else:
        stem = _slug(name, "_")
        if memory_type:
            stem = f"{memory_type}_{stem}"
    # Taken also when only case or width differ: macOS and Windows would see one file
    # (docs/design.md §4).
    taken = {fold_key(entry.name) for entry in os.scandir(root)} if root.is_dir() else set()
    candidate, n = f"{stem}.md", 2
    while fold_key(candidate) in taken:
        candidate, n = f"{stem}-{n}.md", n + 1
    return candidate


def edited_text(
    previous: Memory, path: str, name: str, description: str, memory_type: str | None, body: str
) -> str:
    """The file an edit writes: the fields replaced, every other frontmatter key kept, and the
    body in the file's line endings (a form's textarea comes back in `\n`, which turned a
    CRLF file's whole body into a change).

    replace() keeps the file's other keys and its problem: render_memory refuses a file whose
    header is not closed within 30 lines rather than adding a second header.
    """
    if "\r\n" in previous.body and "\r" not in body:
        body = body.replace("\n", "\r\n")
    memory = replace(
        previous,
        name=name,
        description=description,
        type=memory_type,
        body=body,
        type_form=previous.type_form or "top",
        path=path,
    )
    return render_memory(memory)


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
    via: str = Via.UI,
    index_line: str | None = None,
    index: bool = True,
    replacing: Collection[str] = (),
) -> MemoryFile:
    """Create (path None, or `path` with `base_sha256` "": a file that must not exist yet) or
    update a topic file and its MEMORY.md line: `index_line` as given (a line that is already
    there leaves MEMORY.md byte for byte), else one written from `name` and `description`.
    A line that does not link to the file raises ValueError before anything is written.

    An update whose `base_sha256` (the file's `checksum` when the form was opened) no longer
    matches the file on disk, or a create whose file appeared meanwhile, raises EditConflict and
    writes nothing, so an edit never overwrites a change made behind the form's back. The bytes
    it replaces are in the file's history (docs/design.md §23). `index` false leaves MEMORY.md
    alone (the `skip_index` flag, for memhub's own writes). `replacing` are keys the same
    change deletes next (a rename), which a new key may look like (`Good.md` → `good.md`).
    """
    check_writable(store)
    if store.kind == Store.Kind.TEAM and memory_type == "user" and via in _NO_TICK:
        raise FileRejected(
            "user_memory_private",
            f"{path or name}: {USER_MEMORY_PRIVATE}",
            {"keys": [path or name], "rule": "user_memory_private"},
        )
    root = Path(store.path)
    with store_lock(store):
        created = path is None or base_sha256 == ""
        if path is None:
            form = detect_type_form(str(root))
            path = new_memory_path(root, name, memory_type, form)
        if created:
            path = normalize_key(path)
            check_new_key(store, path, replacing=replacing)
        target = store_file_path(store, path)
        if created:
            if target.exists():
                data = target.read_bytes()
                raise EditConflict(path, data.decode("utf-8", "replace"), checksum(data))
            previous = Memory(type_form=detect_type_form(str(root)), has_frontmatter=True)
            target.parent.mkdir(parents=True, exist_ok=True)
        else:
            data = target.read_bytes()
            if base_sha256 is not None and checksum(data) != base_sha256:
                raise EditConflict(path, data.decode("utf-8", "replace"), checksum(data))
            previous = parse_memory(data, path=path)
        rendered = edited_text(previous, path, name, description, memory_type, body)
        text = check_entry(path, rendered, exclude=store.exclude)
        line = index_line if index_line is not None else format_index_entry(name, path, description)
        with_index_entry("", path, line)  # a line of another file: refused before any write
        if store.kind == Store.Kind.TEAM:
            check_secrets(store, {path: text}, {path: line})
        capture_before_write(store, [path, INDEX_FILENAME] if not created else [INDEX_FILENAME])
        index_before = read_index_bytes(store)
        write_atomic(target, text)
        data = {path: text.encode("utf-8")}
        lines = {path: line} if index else {}
        record_changes(store, data, via=via, user=user, index_lines=lines)
        if index:
            write_index_entry(root, path, line)
            record_index(store, index_before, via=via, user=user, note=f"the line of {path}")
        rescan_store(store)
    announce_change(store, user, {path, INDEX_FILENAME} if index else {path})
    record_event("memory_written", store=store, user=user, path=path, via=via, created=created)
    return store.files.get(path=path)


def do_keep_disk_version(store: Store, user, path: str, discarded: str) -> str | None:
    """Settle an edit conflict for the file on disk, writing nothing to it: the edit not kept
    becomes a version in the file's history (then the disk's bytes again, so the latest
    version is what is on disk), restorable as the conflict page promises. An edit saving
    would have refused (a secret: a team store's history is every member's) is kept nowhere,
    and why is returned; None otherwise."""
    try:
        check_entry(path, discarded, exclude=store.exclude)
        check_secrets(store, {path: discarded})
    except FileRejected as exc:
        return str(exc)
    with store_lock(store):
        capture_before_write(store, [path])
        try:
            current = store_file_path(store, path).read_bytes()
        except FileNotFoundError:
            current = None
        mine = discarded.encode("utf-8")
        if mine == current:
            return None
        note = "an edit not kept: the version on disk was kept"
        record_changes(store, {path: mine}, via=Via.UI, user=user, note=note)
        if current is not None:
            note = "the version on disk, kept over an edit"
            record_changes(store, {path: current}, via=Via.UI, user=user, note=note)
        rescan_store(store)  # the mirror may not have seen the change that conflicted yet
    return None


def do_forget_memory(
    store: Store, user, path: str, via: str = Via.UI, *, index: bool = True
) -> None:
    """Move a topic file to the trash and remove its MEMORY.md line; the mirror follows."""
    do_forget_memories(store, user, [path], via=via, index=index)


def do_forget_memories(
    store: Store, user, paths: list[str], via: str = Via.UI, *, index: bool = True
) -> list[str]:
    """Move topic files to the trash (restorable for MEMHUB_TRASH_DAYS, with their index
    lines) and remove their MEMORY.md lines (`index` false: MEMORY.md is left alone, the
    `skip_index` flag); returns the paths that were there."""
    check_writable(store)
    root = Path(store.path)
    targets = {path: listed_file_path(store, path) for path in paths}
    forgotten: dict[str, bytes] = {}
    with store_lock(store):
        capture_before_write(store, [*targets, INDEX_FILENAME])
        index_before = read_index_bytes(store)
        lines = index_lines(root, targets)
        for path, target in targets.items():
            try:
                forgotten[path] = target.read_bytes()
            except FileNotFoundError:
                continue
            delete_file(target, missing_ok=True)
            if index:
                with suppress(ValueError):  # a name no index line can link to has none
                    delete_index_entry(root, path)
        record_changes(store, {}, forgotten, via=via, user=user, index_lines=lines)
        record_index(store, index_before, via=via, user=user, note="lines of forgotten memories")
        rescan_store(store)
    announce_change(store, user, {*targets, INDEX_FILENAME} if index else set(targets))
    for path in forgotten:
        record_event("memory_forgotten", store=store, user=user, path=path, via=via)
    return list(forgotten)


def do_rebuild_index_entries(store: Store, user) -> list[str]:
    """Add a MEMORY.md line for each topic file missing from it; existing lines stay as they are."""
    root = Path(store.path)
    with store_lock(store):
        capture_before_write(store, [INDEX_FILENAME])
        index_before = read_index_bytes(store)
        health = index_health(root, exclude=tuple(store.exclude))
        files = {f.path: f for f in store.files.filter(path__in=health.unindexed)}
        for path in health.unindexed:
            file = files.get(path)
            title = file.title if file else path.removesuffix(".md")
            hook = file.description if file else ""
            write_index_entry(root, path, format_index_entry(title, path, hook))
        note = "rebuilt index entries"
        record_index(store, index_before, via=Via.UI, user=user, note=note)
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
    via: str = Via.API,
    index: dict[str, str] | None = None,
    note: str = "",
    mtimes: Mapping[str, int] | None = None,
) -> dict[str, list[str]]:
    """Write several files at once: all are checked first (keys, NFC on the way in and no
    look-alike of a key beside them, sizes, UTF-8, secrets, preconditions) and nothing is
    written unless every one passes. Files whose content is
    already on disk are left alone (their mtime too). `index` sets the MEMORY.md line of
    written keys; deleted files go to the trash, replaced bytes stay in their history, and so
    do MEMORY.md's, however it changed (a key of its own or a line). `mtimes` (ms, by key)
    are the written files' modification times where they came from (an agent's machine),
    none later than now: the age an agent sees is the memory's, not the sync's."""
    check_writable(store)
    on_disk = {f.key for f in walk_store(store.path, store.exclude)}
    # NFC, a file on disk keeping its spelling; two keys of one file refused, not merged.
    stored = store_keys([*files, *delete], on_disk)
    files = {stored[key]: text for key, text in files.items()}
    delete = tuple(stored[key] for key in delete)
    if_match = {stored.get(key, key): sum_ for key, sum_ in (if_match or {}).items()}
    index = {stored.get(key, key): line for key, line in (index or {}).items()}
    mtimes = {stored.get(key, key): ms for key, ms in (mtimes or {}).items()}
    paths = {key: store_file_path(store, key) for key in [*files, *delete]}
    check_key_neighbours(files, on_disk - set(delete))
    _check_index_lines(index)
    encoded = {
        key: text.encode("utf-8")
        for key, text in check_entries(files, exclude=store.exclude).items()
    }
    check_secrets(store, files if store.kind == Store.Kind.TEAM else {}, index)
    if store.kind == Store.Kind.TEAM and via in _NO_TICK:
        refuse_user_memories(files, allow=False)
    result: dict[str, list[str]] = {"written": [], "unchanged": [], "deleted": []}
    with store_lock(store):
        for key, expected in if_match.items():
            current = _current_checksum(paths[key])
            if expected is not None and current != expected:
                raise FileRejected(
                    "precondition_failed",
                    f"{key!r} changed on the server since it was read",
                    {"key": key, "checksum": current},
                )
        created = set()
        capture_before_write(store, [*encoded, *delete, INDEX_FILENAME])
        index_before = read_index_bytes(store)
        lines = index_lines(Path(store.path), delete) if delete else {}
        gone: dict[str, bytes] = {}
        for key, data in encoded.items():
            current = _current_checksum(paths[key])
            if current == checksum(data):
                result["unchanged"].append(key)
                continue
            if current is None:
                created.add(key)
            paths[key].parent.mkdir(parents=True, exist_ok=True)
            write_atomic(paths[key], data.decode("utf-8"))
            keep_mtime(paths[key], mtimes.get(key))
            result["written"].append(key)
        for key in delete:
            try:
                gone[key] = paths[key].read_bytes()
            except FileNotFoundError:
                continue
            delete_file(paths[key], missing_ok=True)
            result["deleted"].append(key)
        for key, line in index.items():
            if key in result["written"]:
                write_index_entry(Path(store.path), key, line)
        if result["written"] or result["deleted"]:
            written = {k: encoded[k] for k in result["written"] if k != INDEX_FILENAME}
            gone.pop(INDEX_FILENAME, None)
            lines.update(index_lines(Path(store.path), written))
            record_changes(store, written, gone, via=via, user=user, note=note, index_lines=lines)
            record_index(store, index_before, via=via, user=user, note=note)
            rescan_store(store)
    if result["written"] or result["deleted"]:
        touched = set(result["written"] + result["deleted"])
        announce_change(store, user, touched | ({INDEX_FILENAME} if index else set()))
    for key in result["written"]:
        record_event(
            "memory_written", store=store, user=user, path=key, via=via, created=key in created
        )
    for key in result["deleted"]:
        record_event("memory_forgotten", store=store, user=user, path=key, via=via)
    return result


def _check_index_lines(index: Mapping[str, str]) -> None:
    """`FileRejected` (``invalid_index_line``) before any write when a MEMORY.md line is not
    one line linking to its key: found after the files were written, it would leave them
    written without their lines."""
    for key, line in index.items():
        try:
            with_index_entry("", key, line)
        except ValueError as exc:
            raise FileRejected(
                "invalid_index_line", f"{key}: its MEMORY.md line is refused: {exc}", {"key": key}
            ) from None


def do_rename_memory(store: Store, user, old: str, new: str, via: str = Via.API) -> None:
    """Move a topic file to a free key (in NFC; a look-alike only of `old` itself, such as a
    case-only rename, is free), its MEMORY.md line following it; `FileNotFoundError` when
    `old` is missing, `FileRejected` (`already_exists`, a bad key, a look-alike of another
    file) and nothing written when `new` is taken or no memory file. Both keys keep their
    history."""
    check_writable(store)
    root = Path(store.path)
    new = normalize_key(new)
    source, target = store_file_path(store, old), store_file_path(store, new)
    with store_lock(store):
        data = source.read_bytes()
        if target.exists():  # on macOS, also the file itself renamed in case only: refused
            raise FileRejected("already_exists", f"{new!r} already exists", {"key": new})
        check_new_key(store, new, replacing=[old])
        text = check_entry(new, data, exclude=store.exclude)
        capture_before_write(store, [old])
        lines = index_lines(root, [old])
        line = _entry_for(text, new)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text)
        delete_file(source, missing_ok=True)
        delete_index_entry(root, old)
        write_index_entry(root, new, line)
        record_changes(
            store,
            {new: text.encode("utf-8")},
            {old: data},
            via=via,
            user=user,
            index_lines={**lines, new: line},
        )
        rescan_store(store)
    announce_change(store, user, {old, new, INDEX_FILENAME})
    record_event("memory_forgotten", store=store, user=user, path=old, via=via)
    record_event("memory_written", store=store, user=user, path=new, via=via, created=True)


def free_path(root: Path, path: str, suffix: str) -> str:
    """`path`, or `<stem>-<suffix>.md` (then `-2`, `-3` …) when a file is already there."""
    if not (root / path).exists():
        return path
    stem = path.removesuffix(".md")
    candidate, n = f"{stem}-{suffix}.md", 2
    while (root / candidate).exists():
        candidate, n = f"{stem}-{suffix}-{n}.md", n + 1
    return candidate


def _entry_for(text: str, path: str) -> str:
    """A MEMORY.md line for `path` from its own header (name, else file name; description)."""
    memory = parse_memory(text.encode("utf-8", "surrogateescape"), path=path)
    title = memory.name or path.rsplit("/", 1)[-1].removesuffix(".md")
    return format_index_entry(title, path, memory.description or "")


def index_entry_for(text: str, path: str) -> str:
    """The MEMORY.md line a writer gives `path` (for callers that propose rather than write)."""
    return _entry_for(text, path)


def _put_back(
    store: Store, user, path: str, data: bytes, *, base: str | None, line: str | None, note: str
) -> None:
    """Write `data` back to `path` exactly as it was, with its MEMORY.md `line` (None: the
    index is left alone). A restore is an undo, not a new write: bytes today's entry checks
    would refuse (NUL, invalid UTF-8, over the size limit, a secret; a team store's push gate
    still keeps a secret from teammates and agents) come back as they were, while the key
    still passes the path rules (docs/design.md §4), names a memory file and looks like no
    other file. `base` is the checksum the person saw ("" for no file; None: none)."""
    check_writable(store)
    root, target = Path(store.path), store_file_path(store, path)
    with store_lock(store):
        current = _current_checksum(target)
        if base is not None and current != (base or None):
            raise FileRejected(
                "precondition_failed",
                f"{path!r} changed on the server since it was read",
                {"key": path, "checksum": current},
            )
        if current is None:
            check_new_key(store, path)
        capture_before_write(store, [path, INDEX_FILENAME])
        index_before = read_index_bytes(store)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic_bytes(target, data)
        if line is not None:
            write_index_entry(root, path, line)
        if path != INDEX_FILENAME:
            lines = {path: line} if line else {}
            record_changes(store, {path: data}, via=Via.UI, user=user, note=note, index_lines=lines)
        record_index(store, index_before, via=Via.UI, user=user, note=note)
        rescan_store(store)
    announce_change(store, user, {path, INDEX_FILENAME})
    created = current is None
    record_event("memory_written", store=store, user=user, path=path, via=Via.UI, created=created)


def do_restore_version(
    store: Store, user, version: MemoryVersion, *, base_checksum: str | None = None
) -> str:
    """Make a past version the file's content again, byte for byte (so the restore is itself a
    new version, and the current bytes stay in the history). Its MEMORY.md line follows the
    restored header when the file is listed or was deleted.

    `base_checksum` (`sha256:…`, or "" for a file that did not exist) is what the person saw:
    if the file changed since, FileRejected (`precondition_failed`) and nothing is written.
    """
    data = blob_bytes(version.sha256) if version.sha256 else None
    if data is None:
        raise FileRejected("not_found", "This version's content is no longer kept.")
    path = version.path
    root = Path(store.path)
    line = None
    if path != INDEX_FILENAME and is_linkable(path):  # the index is restored whole, as any file
        listed = path in index_lines(root, [path])
        if listed or not (root / path).exists():
            line = version.index_line or _entry_for(data.decode("utf-8", "replace"), path)
    note = f"restored the version of {version.created_at:%Y-%m-%d %H:%M:%S}"
    _put_back(store, user, path, data, base=base_checksum, line=line, note=note)
    return path


def do_restore_from_trash(item: TrashItem, user) -> str:
    """Put a forgotten memory back, byte for byte, with the MEMORY.md line it had; under a new
    name when a file has taken its place meanwhile (or its name held a backslash, now a
    dash). Returns the path it was restored to."""
    store = item.store
    data = blob_bytes(item.sha256)
    if data is None:
        raise FileRejected("not_found", "This memory's content is no longer kept.")
    root = Path(store.path)
    path = free_path(root, item.path.replace("\\", "-"), "restored")
    text = data.decode("utf-8", "replace")
    # The line it had (none: it was not listed, and an undo lists it no more than before),
    # written anew for a new name; `#` or `<` in a name: no line can point at it.
    line = item.index_line or None
    if line is not None and path != item.path:
        line = _entry_for(text, path) if is_linkable(path) else None
    note = f"restored from the trash (forgotten {item.deleted_at:%Y-%m-%d %H:%M})"
    _put_back(store, user, path, data, base="", line=line, note=note)
    item.delete()
    return path


def secret_hits(
    store: Store, files: Mapping[str, str], index: Mapping[str, str] | None = None
) -> list[dict]:
    """What the secret filter (docs/design.md §10a) finds in `files` and in the MEMORY.md lines
    (`index`: key → line) about to be written to `store`, each hit by key, rule and line (an
    index line's hit names MEMORY.md, its line among `index`, and the memory as `entry`).

    A team store gets both layers, as team sync's push gate and the protocol: what it holds
    is served to every member and pushed. A private store's files pass the fast rules in
    `check_entries`; its index lines pass them here."""
    keys = list(index or {})
    text = "\n".join((index or {})[key].replace("\n", " ") for key in keys)
    if store.kind == Store.Kind.TEAM:
        configure_secret_gate(entropy=get_flags(store.project)["secrets_entropy_plugins"])
        blocked = scan_for_push(files)
        in_index = scan_for_push({INDEX_FILENAME: text}).get(INDEX_FILENAME, []) if keys else []
    else:
        blocked, in_index = {}, scan_text(text) if keys else []
    hits = [
        {"key": key, "rule_id": h.rule_id, "label": h.label, "line": h.line}
        for key, found in blocked.items()
        for h in found
    ]
    return hits + [
        {
            "key": INDEX_FILENAME,
            "entry": keys[h.line - 1],
            "rule_id": h.rule_id,
            "label": h.label,
            "line": h.line,
        }
        for h in in_index
    ]


def _described(hit: dict) -> str:
    if "entry" in hit:
        return f"{INDEX_FILENAME} line for {hit['entry']} ({hit['label']})"
    return f"{hit['key']} ({hit['label']}, {place(hit['line'])})"


def check_secrets(
    store: Store, files: Mapping[str, str], index: Mapping[str, str] | None = None
) -> None:
    """Refuse with `secret_detected` what :func:`secret_hits` finds; nothing is written."""
    hits = secret_hits(store, files, index)
    if hits:
        raise FileRejected(
            "secret_detected",
            "refused: " + ", ".join(map(_described, hits)) + " holds what looks like a secret",
            {"entries": hits},
        )


def _team_gate(team: Store, files: dict[str, str], index: dict[str, str]) -> None:
    """The checks of team sync's push gate (docs/design.md §10a) and caps, before anything is
    written to a team store: what would never be pushed is not copied there either, its
    MEMORY.md line included."""
    flags = get_flags(team.project)
    hits = secret_hits(team, files, index)
    if hits:
        raise FileRejected(
            "secret_detected",
            "refused: "
            + ", ".join(map(_described, hits))
            + " would not pass team sync's secret filter; nothing was shared",
            {"entries": hits},
        )
    limit = flags["team_max_entry_bytes"]
    large = [key for key, text in files.items() if len(text.encode("utf-8")) > limit]
    if large:
        raise FileRejected(
            "entry_too_large",
            f"refused: {', '.join(large)} over {limit:,} bytes, the team store's limit",
            {"keys": large, "max_bytes": limit},
        )
    new = [key for key in files if not (Path(team.path) / key).exists()]
    total = team.files.count() + len(new)
    if new and total > flags["team_max_entries"]:
        raise FileRejected(
            "team_memory_too_many_entries",
            f"refused: the team store would hold {total} memories; the limit is "
            f"{flags['team_max_entries']}",
            {"max_entries": flags["team_max_entries"], "received_entries": total},
        )


# Writes from agents, which have no box to tick that a user memory goes to team memory anyway
# (docs/design.md §14).
_NO_TICK = (Via.API, Via.AGENT_SYNC)
USER_MEMORY_PRIVATE = (
    "user memories are about a person and stay private; to put one in team memory anyway, "
    "tick that you mean it"
)


def refuse_user_memories(files: dict[str, str], allow: bool) -> None:
    """FileRejected `user_memory_private` when `files` (bound for a team store) hold a `user`
    memory and the person did not tick that they mean it (`allow`)."""
    found = [] if allow else user_memories(files)
    if found:
        raise FileRejected(
            "user_memory_private",
            f"{', '.join(found)}: {USER_MEMORY_PRIVATE}",
            {"keys": found, "rule": "user_memory_private"},
        )


def do_share_memories(
    store: Store, user, paths: list[str], *, allow_user: bool = False
) -> dict[str, str]:
    """Copy private memories into the project's team store, through the push gate, each with
    its MEMORY.md line. A memory already there unchanged is left alone; a different memory of
    the same name is never overwritten: the copy gets a new name. A `user` memory goes only
    with `allow_user` (the person ticked it). Returns path → team path."""
    team = team_store_for(user, store.project) if store.kind == Store.Kind.PRIVATE else None
    if team is None:
        raise FileRejected("no_team_store", "This memory's project has no team store you share.")
    root, team_root = Path(store.path), Path(team.path)
    texts = {}
    for path in paths:
        data = store_file_path(store, path).read_bytes()
        try:
            texts[path] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise FileRejected("invalid_utf8", f"{path!r} is not valid UTF-8") from None
    refuse_user_memories(texts, allow_user)
    lines = index_lines(root, paths)
    targets: dict[str, str] = {}
    files: dict[str, str] = {}
    index: dict[str, str] = {}
    for path, text in texts.items():
        existing = team_root / path
        if existing.is_file() and existing.read_bytes() == text.encode("utf-8"):
            targets[path] = path
            continue
        target = free_path(team_root, path, "shared")
        targets[path] = target
        files[target] = text
        line = lines.get(path)
        index[target] = line if line and target == path else _entry_for(text, target)
    if get_flags(team.project)["skip_index"]:
        index = {}  # the server's own writes leave MEMORY.md alone
    if files:
        _team_gate(team, files, index)
        do_put_files(
            team,
            user,
            files,
            via=Via.UI,
            index=index,
            note=f"shared from {user.get_username()}'s private memory",
        )
    return targets


def do_import_files(
    store: Store,
    user,
    files: dict[str, str],
    index: dict[str, str],
    *,
    replace: bool,
    allow_user: bool = False,
) -> dict[str, list[str]]:
    """Write the files of a checked import (`memapp.stores.transfer.read_import`): new files
    always; files that exist with other content only with `replace` (their old bytes stay in
    their history), else they are listed as `kept`. Team stores pass the push gate first, and
    take `user` memories only with `allow_user`."""
    root = Path(store.path)
    kept = [
        key
        for key in files
        if not replace
        and (root / key).is_file()
        and (root / key).read_bytes() != files[key].encode("utf-8")
    ]
    wanted = {key: text for key, text in files.items() if key not in kept}
    lines = {key: index.get(key) or _entry_for(text, key) for key, text in wanted.items()}
    if store.kind == Store.Kind.TEAM and wanted:
        refuse_user_memories(wanted, allow_user)
        _team_gate(store, wanted, lines)
    result = do_put_files(store, user, wanted, via=Via.IMPORT, index=lines)
    return {**result, "kept": kept}
