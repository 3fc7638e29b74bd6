"""A store as a zip file, out and in (docs/design.md §24).

Export writes the topic files (and a MEMORY.md with their lines) as they are on disk. Import
checks every entry of an uploaded zip before anything is written: the archive as a whole
(a zip at all, how many entries, how many bytes once unpacked), then each entry: its key by
the store's file rule (docs/design.md §6a), a regular file, not encrypted, at most 250,000 bytes
when read whatever its header claims, UTF-8 without NUL, no secret. An archive that fails as a
whole is refused; entries that fail are listed with their reason, and nothing is written unless
the person chose to skip them.
"""

from __future__ import annotations

import posixpath
import stat
import tempfile
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from memapp.memdir.frontmatter import user_memories
from memapp.memdir.index import INDEX_FILENAME, parse_index_entries, read_index
from memapp.memdir.keys import PathTraversalError, new_key_problems, stored_keys
from memapp.memdir.secret_rules import place
from memapp.memdir.store_files import (
    MAX_ENTRY_BYTES,
    FileRejected,
    check_entry,
    walk_store,
)
from memapp.stores.actions import USER_MEMORY_PRIVATE, secret_hits, store_file_path
from memapp.stores.models import Store

MAX_IMPORT_ENTRIES = 5_000
MAX_IMPORT_BYTES = 50 * 1024 * 1024  # unpacked, summed over the entries actually read
MAX_UPLOAD_BYTES = 20 * 1024 * 1024
_IGNORED_PREFIXES = ("__MACOSX/",)


class ImportRefused(Exception):
    """The archive as a whole cannot be imported; nothing was read into the store."""


@dataclass
class ImportPlan:
    files: dict[str, str] = field(default_factory=dict)  # key -> text, passed every check
    index: dict[str, str] = field(default_factory=dict)  # key -> its line in the zip's index
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (entry name, why)


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    """At most `cap` + 1 bytes of an entry: a header that lies about the size cannot make it
    unpack more than that."""
    with archive.open(info) as handle:
        return handle.read(cap + 1)


def _entry_problem(store: Store, info: zipfile.ZipInfo) -> str | None:
    if stat.S_ISLNK(info.external_attr >> 16):
        return "a symbolic link, not a file"
    if info.flag_bits & 0x1:
        return "encrypted"
    try:
        store_file_path(store, info.filename)
    except FileRejected as exc:
        return str(exc)
    if info.file_size > MAX_ENTRY_BYTES:
        return f"{info.file_size:,} bytes; the limit is {MAX_ENTRY_BYTES:,}"
    return None


def _hit_place(hit: dict) -> str:
    return f"{hit['label']} {place(hit['line'], on=True)}"


def _text_problem(store: Store, key: str, data: bytes) -> tuple[str | None, str]:
    """The store's entry checks (size, UTF-8, NUL, the fast secret rules), as a reason. The
    index's secrets are judged line by line (`_index_secrets`): one bad line loses no other."""
    try:
        return None, check_entry(key, data, exclude=store.exclude, secrets=key != INDEX_FILENAME)
    except FileRejected as exc:
        if exc.code == "secret_detected":
            found = ", ".join(_hit_place(h) for h in exc.details["entries"])
            return f"holds what looks like a secret ({found})", ""
        return str(exc).removeprefix(f"{key}: "), ""


def read_import(store: Store, upload: IO[bytes], *, allow_user: bool = False) -> ImportPlan:
    """Check an uploaded zip for `store` with every check the import makes, so what passes
    here is imported (a `user` memory into a team store only with `allow_user`); raises
    ImportRefused when it cannot be read at all."""
    try:
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ImportRefused("This is not a zip file.") from None
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > MAX_IMPORT_ENTRIES:
            raise ImportRefused(
                f"The zip holds {len(infos):,} files; at most {MAX_IMPORT_ENTRIES:,} are imported "
                "at once."
            )
        existing = {found.key for found in walk_store(store.path, store.exclude)}
        plan, total = ImportPlan(), 0
        seen: dict[str, str] = {}  # stored key -> the first entry name stored under it
        for info in infos:
            name = info.filename
            if name.startswith(_IGNORED_PREFIXES) or posixpath.basename(name).startswith("."):
                plan.skipped.append((name, "hidden or system metadata"))
                continue
            # Stored as a write stores it (NFC, docs/design.md §4; macOS zips spell names in
            # NFD), so its index line and history name the file written.
            key = stored_keys([name], existing)[name]
            if key in seen:
                plan.skipped.append((name, _twice(name, seen[key])))
                continue
            seen[key] = name
            is_index = posixpath.basename(name) == INDEX_FILENAME
            if is_index and name != INDEX_FILENAME:
                plan.skipped.append((name, "an index of another directory"))
                continue
            problem = None if is_index else _entry_problem(store, info)
            if problem is None:
                try:
                    data = _read_capped(archive, info, MAX_ENTRY_BYTES)
                except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, OSError):
                    problem = "cannot be unpacked"
                else:
                    total += len(data)
                    if total > MAX_IMPORT_BYTES:
                        raise ImportRefused(
                            f"The zip unpacks to more than {MAX_IMPORT_BYTES // 2**20} MB."
                        )
                    problem, text = _text_problem(store, name, data)
            if problem is not None:
                plan.skipped.append((name, problem))
            elif is_index:
                for entry in parse_index_entries(text):
                    if entry.path:
                        plan.index.setdefault(entry.path, entry.raw)
            else:
                plan.files[key] = text
    _neighbours(plan, existing)
    if store.kind == Store.Kind.TEAM and not allow_user:
        for key in user_memories(plan.files):
            plan.skipped.append((key, f"a user memory: {USER_MEMORY_PRIVATE}"))
            del plan.files[key]
    plan.index = {key: line for key, line in plan.index.items() if key in plan.files}
    if store.kind == Store.Kind.TEAM and plan.files:
        _team_secrets(store, plan)
    _index_secrets(store, plan)
    return plan


def _twice(name: str, twin: str) -> str:
    if twin == name:
        return "appears twice in the zip"
    return str(PathTraversalError("lookalike-duplicate", name, beside=twin))


def _neighbours(plan: ImportPlan, existing: set[str]) -> None:
    """Skip each file that would sit beside another (in the store or, before it, in the zip) as
    one file on macOS or Windows (`Code_Review.md` beside `code_review.md`), or under a file:
    the import's own check of the keys it writes, made here on all of them at once."""
    for key, problem in new_key_problems(plan.files, existing).items():
        plan.skipped.append((key, str(problem)))
        del plan.files[key]


def _team_secrets(store: Store, plan: ImportPlan) -> None:
    """Team sync's push filter (docs/design.md §10a): what it would keep back is not imported."""
    found: dict[str, list[str]] = {}
    for hit in secret_hits(store, plan.files):
        found.setdefault(hit["key"], []).append(_hit_place(hit))
    for key, hits in found.items():
        plan.skipped.append((key, f"holds what looks like a secret ({', '.join(hits)})"))
        del plan.files[key]
        plan.index.pop(key, None)


def _index_secrets(store: Store, plan: ImportPlan) -> None:
    """The zip's MEMORY.md lines pass the same filter as what a write would take (both layers
    for a team store): a line that holds a secret is left out and the memory gets a line made
    from its own header, as when the zip has none."""
    for hit in secret_hits(store, {}, plan.index):
        key = hit["entry"]
        if plan.index.pop(key, None) is not None:
            plan.skipped.append(
                (
                    f"{INDEX_FILENAME} ({key})",
                    f"its line holds what looks like a secret ({hit['label']}); a new line is "
                    "written from the memory's header",
                )
            )


def export_zip(store: Store, paths: list[str] | None = None) -> IO[bytes]:
    """A zip of the store's topic files (or of `paths`) and a MEMORY.md holding their lines
    (the whole index when exporting everything), in a temporary file ready to be read."""
    root = Path(store.path)
    wanted = (
        sorted(paths)
        if paths is not None
        else list(store.files.order_by("path").values_list("path", flat=True))
    )
    out = tempfile.TemporaryFile()  # noqa: SIM115 (returned open; the response closes it)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key in wanted:
            try:
                archive.writestr(key, store_file_path(store, key).read_bytes())
            except (OSError, FileRejected):
                continue  # gone since it was listed, or never a key of this store
        index = read_index(root)
        if paths is not None:
            keep = set(wanted)
            lines = [e.raw for e in parse_index_entries(index) if e.path in keep]
            index = "".join(f"{line}\n" for line in lines)
        if index:
            archive.writestr(INDEX_FILENAME, index)
    out.seek(0)
    return out
