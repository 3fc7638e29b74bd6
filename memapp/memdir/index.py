"""The index of a memory directory: MEMORY.md.

MEMORY.md holds one line per memory, `- [Title](file.md) — one-line hook`, and is loaded into
every session, so the client caps it (200 lines, 25,000 bytes) and warns when it had to cut.
`truncate_index` reproduces that cut; the entry helpers edit one entry while keeping every other
byte of the file; `index_health` reports what memhub adds (dangling entries, unindexed files,
over-long entries, closeness to the caps).
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from memapp.memdir.atomic import write_atomic_bytes
from memapp.memdir.scan import scan_memory_files
from memapp.memdir.store_files import INDEX_FILENAME, read_file, settled_signature

__all__ = [
    "load_index",
    "INDEX_FILENAME",
    "MAX_ENTRY_CHARS",
    "MAX_INDEX_BYTES",
    "MAX_INDEX_LINES",
    "IndexEntry",
    "IndexHealth",
    "IndexTruncation",
    "write_index_entry",
    "cut_to_bytes",
    "format_index_entry",
    "is_linkable",
    "format_size",
    "merge_index",
    "index_health",
    "index_size",
    "over_caps_reason",
    "parse_index_entries",
    "read_index",
    "delete_index_entry",
    "without_entries_of",
    "without_index_entry",
    "truncate_index",
    "with_index_entry",
]

MAX_INDEX_LINES = 200
MAX_INDEX_BYTES = 25_000
MAX_ENTRY_CHARS = 200

# JavaScript's String.prototype.trim() removes whitespace and the byte order mark. str.strip()
# with an explicit set is linear; a regex anchored at the end is tried at every position.
_TRIM_CHARS = (  # every character str.isspace() accepts, and the BOM
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_FIX_HINT = "Keep index entries to one line under ~200 chars; move detail into topic files."


# --- Truncation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexTruncation:
    """The index as the client loads it.

    `line_count`, `byte_count` and both flags describe the original text (after stripping
    surrounding whitespace, as the client does), not `content`.
    """

    content: str
    line_count: int
    byte_count: int
    was_line_truncated: bool
    was_byte_truncated: bool

    @property
    def was_truncated(self) -> bool:
        return self.was_line_truncated or self.was_byte_truncated


def format_size(num_bytes: int) -> str:
    """A byte count as the client words it: `999 bytes`, `4KB`, `24.4KB`, `1.5MB`.

    Units of 1024, one decimal rounded half up, a trailing `.0` dropped.

    >>> format_size(25_000)
    '24.4KB'
    """
    if num_bytes < 1024:
        return f"{num_bytes} bytes"
    value = Decimal(num_bytes)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            break
    text = str(value.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    return f"{text.removesuffix('.0')}{unit}"


def _utf8_len(text: str) -> int:
    if text.isascii():  # the common case, without encoding a copy of the whole text
        return len(text)
    # surrogatepass: text decoded with surrogateescape must still be measurable.
    return len(text.encode("utf-8", "surrogatepass"))


def index_size(text: str) -> tuple[int, int]:
    """MEMORY.md's lines and UTF-8 bytes as the client measures them against the caps: after
    stripping surrounding whitespace and a BOM (empty text: 0 and 0)."""
    trimmed = text.strip(_TRIM_CHARS)
    return (trimmed.count("\n") + 1 if trimmed else 0), _utf8_len(trimmed)


def cut_to_bytes(text: str, max_bytes: int) -> str:
    """Shorten `text` to at most `max_bytes` UTF-8 bytes, at the last newline when there is one.

    The newline itself is dropped. Without a newline (other than at the very start) the cut is
    hard, moved back so it never splits a multi-byte character.
    """
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= max_bytes:
        return text
    cut = encoded.rfind(b"\n", 0, max_bytes + 1)
    if cut <= 0:
        cut = max_bytes
        while cut > 0 and encoded[cut] & 0xC0 == 0x80:
            cut -= 1
    return encoded[:cut].decode("utf-8", "surrogatepass")


def over_caps_reason(
    line_count: int,
    byte_count: int,
    max_lines: int,
    max_bytes: int,
    lines_over: bool,
    bytes_over: bool,
) -> str:
    """The client's words for the caps that fired, with the figures.

    `300 lines (limit: 200)`, `26.9KB (limit: 24.4KB)` or, when both fired, `300 lines and
    26.9KB`.
    """
    if lines_over and bytes_over:
        return f"{line_count} lines and {format_size(byte_count)}"
    if lines_over:
        return f"{line_count} lines (limit: {max_lines})"
    return f"{format_size(byte_count)} (limit: {format_size(max_bytes)})"


def truncate_index(
    text: str, max_lines: int = MAX_INDEX_LINES, max_bytes: int = MAX_INDEX_BYTES
) -> IndexTruncation:
    """Cut MEMORY.md to the caps the client loads, appending a warning when anything was cut.

    Lines first (the first `max_lines`), then, if still over `max_bytes` UTF-8 bytes, at the last
    newline before the cap (a hard cut only when there is none). Surrounding whitespace (and a
    byte order mark) is stripped first, as the client does; empty text has 0 lines and 0 bytes.
    A 300-line file of short lines gives::

        <first 200 lines>

        > WARNING: MEMORY.md is 300 lines (limit: 200). Only part of it was loaded. Keep index
        entries to one line under ~200 chars; move detail into topic files.

    (one line in the result). Sizes are worded by `format_size`: `26.9KB (limit: 24.4KB) — index
    entries are too long` when only the size fired, `300 lines and 26.9KB` when both did.
    """
    trimmed = text.strip(_TRIM_CHARS)
    line_count, byte_count = index_size(trimmed)
    if not trimmed:
        return IndexTruncation("", 0, 0, False, False)
    lines_over = line_count > max_lines
    bytes_over = byte_count > max_bytes
    if not (lines_over or bytes_over):
        return IndexTruncation(trimmed, line_count, byte_count, False, False)

    truncated = "\n".join(trimmed.split("\n", max_lines)[:max_lines]) if lines_over else trimmed
    truncated = cut_to_bytes(truncated, max_bytes)
    reason = over_caps_reason(line_count, byte_count, max_lines, max_bytes, lines_over, bytes_over)
    if bytes_over and not lines_over:
        reason += " — index entries are too long"
    warning = (
        f"\n\n> WARNING: {INDEX_FILENAME} is {reason}. Only part of it was loaded. {_FIX_HINT}"
    )
    return IndexTruncation(truncated + warning, line_count, byte_count, lines_over, bytes_over)


# --- Entries ----------------------------------------------------------------------------------

# A list item: `-`, `*`, `+` or `1.` / `1)`, at any indentation.
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
# An inline link (not an image): text with escapes and one level of nested brackets, then a
# destination in angle brackets or bare (balanced parentheses allowed), then an optional title.
_LINK = re.compile(
    r"""(?<!!)\[(?P<text>(?:\\.|[^\\\[\]\n]|\[(?:\\.|[^\\\[\]\n])*\])*)\]
    \(\s*(?:<(?P<angle>[^<>\n]*)>|(?P<bare>[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*))
    (?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)""",
    re.VERBOSE,
)
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_HOOK_SEPARATOR = re.compile(r"\s*(?:—|–|--|-|:)?\s*")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class IndexEntry:
    """One index line that is a list item with a link, such as `- [Title](file.md) — hook`.

    `line_number` counts from 1. `target` is the link destination as written; `path` is the
    file it names relative to the memory directory (`./a.md`, `<a.md>` and `a.md#why` all give
    `a.md`; no percent-decoding), or None when the link is not a relative path inside the
    directory (a URL, an absolute path, `../x.md`). `raw` is the line without its line ending
    and `length` its length in characters.
    """

    line_number: int
    title: str
    target: str
    path: str | None
    hook: str
    raw: str
    length: int


def _split_lines(text: str) -> list[tuple[str, str]]:
    """`text` as (content, line ending) pairs; joining them gives back `text` exactly.

    Only `\\n` ends a line; a `\\r` right before it belongs to the ending (`\\r\\n`). The last
    pair has an empty ending when the text does not end with a newline.
    """
    lines = []
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        if end == -1:
            lines.append((text[start:], ""))
            break
        content, ending = text[start:end], "\n"
        if content.endswith("\r"):
            content, ending = content[:-1], "\r\n"
        lines.append((content, ending))
        start = end + 1
    return lines


def _join_lines(lines: Iterable[tuple[str, str]]) -> str:
    return "".join(content + ending for content, ending in lines)


def _link_path(target: str) -> str | None:
    if _SCHEME.match(target) or target.startswith(("/", "\\")):
        return None
    target = target.split("#", 1)[0]
    if not target or "\\" in target or "\0" in target:
        return None
    normal = posixpath.normpath(target)
    if normal in (".", "..") or normal.startswith("../") or normal.startswith("/"):
        return None
    return normal


def _links(line: str) -> list[tuple[str, str]]:
    return [
        (match["text"], match["angle"] if match["angle"] is not None else match["bare"])
        for match in _LINK.finditer(line)
    ]


def _parse_line(line_number: int, raw: str) -> IndexEntry | None:
    item = _LIST_ITEM.match(raw)
    if item is None:
        return None
    link = _LINK.search(raw, item.end())
    if link is None:
        return None
    target = link["angle"] if link["angle"] is not None else link["bare"]
    rest = raw[link.end() :]
    separator = _HOOK_SEPARATOR.match(rest)  # it matches the empty string: never None
    hook = rest[separator.end() if separator else 0 :].strip()
    return IndexEntry(
        line_number=line_number,
        title=_ESCAPED.sub(r"\1", link["text"]),
        target=target,
        path=_link_path(target),
        hook=hook,
        raw=raw,
        length=len(raw),
    )


def parse_index_entries(text: str) -> list[IndexEntry]:
    """The entries of an index: list items holding a link (the first link is the entry's).

    Other lines (headings, prose, blank lines, list items without a link) are not entries.
    """
    entries = []
    for number, (content, _) in enumerate(_split_lines(text), start=1):
        entry = _parse_line(number, content)
        if entry is not None:
            entries.append(entry)
    return entries


def _clean_filename(filename: str) -> str:
    path = _link_path(filename)
    if (
        path is None
        or path != filename.removeprefix("./")
        or any(c in filename for c in "\n\r#")
        or posixpath.basename(path) == INDEX_FILENAME
    ):
        raise ValueError(f"not a topic file path relative to the memory directory: {filename!r}")
    return path


def _one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def is_linkable(filename: str) -> bool:
    """Whether the index can have an entry for `filename`: a topic file named with `#` (a
    link's fragment) or `<`/`>` is a memory all the same, but no index line can point at it."""
    try:
        format_index_entry("", filename)
    except ValueError:
        return False
    return True


def format_index_entry(title: str, filename: str, hook: str = "") -> str:
    """The index line for a memory: `- [Title](file.md) — hook`.

    Whitespace runs (newlines included) in `title` and `hook` become one space; `\\`, `[` and
    `]` in the title are backslash-escaped. An empty title falls back to `filename`; an empty
    hook drops the ` — ` part. A filename with spaces or parentheses is written in angle
    brackets (`[T](<my notes.md>)`). Raises `ValueError` for a `filename` that is not a clean
    relative path (see `with_index_entry`).
    """
    path = _clean_filename(filename)
    if any(c in path for c in "<>"):
        raise ValueError(f"file name cannot be linked from the index: {filename!r}")
    title = _one_line(title) or path
    title = title.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    destination = f"<{path}>" if re.search(r"[\s()]", path) else path
    line = f"- [{title}]({destination})"
    hook = _one_line(hook)
    return f"{line} — {hook}" if hook else line


def _matches(content: str, path: str) -> bool:
    entry = _parse_line(0, content)
    return entry is not None and entry.path == path


def with_index_entry(text: str, filename: str, line: str) -> str:
    """`text` with the entry for `filename` set to `line`; every other byte is kept.

    The entry is the first list item whose link names `filename` (also as `./file.md`,
    `<file.md>` or `file.md#part`; no percent-decoding); it is replaced in place and keeps its
    line ending. Later duplicates of it are removed. Without one, `line` is appended, using the
    file's line ending (`\\r\\n` if its last line ending is one) and keeping whether the file
    ends with a newline (an empty file gets `line` and `\\n`).

    Raises `ValueError` if `filename` is not a relative topic file path (no `..`, `#`,
    backslash or newline, not MEMORY.md), or if `line` spans more than one line or is not
    an entry linking to `filename`.
    """
    path = _clean_filename(filename)
    if "\n" in line or "\r" in line:
        raise ValueError("an index entry must be a single line")
    if not _matches(line, path):
        raise ValueError(f"index entry does not link to {filename!r}: {line!r}")
    lines = _split_lines(text)
    matching = [i for i, (content, _) in enumerate(lines) if _matches(content, path)]
    if matching:
        first, *duplicates = matching
        lines[first] = (line, lines[first][1])
        return _remove_lines(lines, set(duplicates))
    if not lines:
        return line + "\n"
    ending = _file_ending(lines)
    last_content, last_ending = lines[-1]
    if last_ending:
        lines.append((line, ending))
    else:
        if ending == "\n" and last_content.endswith("\r"):
            # A bare "\n" after a trailing "\r" would read back as one "\r\n" ending.
            ending = "\r\n"
        lines[-1] = (last_content, ending)
        lines.append((line, ""))
    return _join_lines(lines)


def _remove_lines(lines: list[tuple[str, str]], drop: set[int]) -> str:
    if not drop:
        return _join_lines(lines)
    ends_with_newline = bool(lines[-1][1])
    kept = [pair for i, pair in enumerate(lines) if i not in drop]
    if kept and not ends_with_newline:
        kept[-1] = (kept[-1][0], "")
    return _join_lines(kept)


def _identity(content: str) -> tuple[str, str] | None:
    """What a line is, across versions of one index: an entry is the file it links (its
    wording may change), any other line its text; None for a blank line."""
    entry = _parse_line(0, content)
    if entry is not None and entry.path is not None:
        return ("entry", entry.path)
    return ("line", content.strip()) if content.strip() else None


def _by_identity(text: str) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for content, _ in _split_lines(text):
        identity = _identity(content)
        if identity is not None:
            found.setdefault(identity, content)
    return found


def merge_index(base: str, ours: str, theirs: str) -> str:
    """`theirs` (an index rewritten from `base`) with what changed in `ours` since `base`.

    A three-way merge line by line, where an entry is matched by the file it links and any
    other line by its text: a line `ours` added is put after the line it follows in `ours` (at
    the top when it follows none that is kept), unless `theirs` has it too; a line `ours`
    removed goes; an entry `ours` reworded is taken, except where `theirs` changed that same
    line (then `theirs` wins: it is what the person approving reads). The order is otherwise
    `theirs`', with its line endings. Nothing `ours` added is lost and no conflict markers are
    ever written. Returns `theirs` unchanged when `ours` is `base`.
    """
    if ours == base:
        return theirs
    before, now = _by_identity(base), _by_identity(ours)
    merged: list[tuple[tuple[str, str] | None, str, str]] = []  # (identity, content, ending)
    for content, ending in _split_lines(theirs):
        identity = _identity(content)
        if identity is not None and before.get(identity) == content:
            if identity not in now:
                continue  # removed since, and this proposal did not rewrite it
            content = now[identity]
        merged.append((identity, content, ending))
    ending = _file_ending(_split_lines(theirs))
    final_newline = not merged or bool(merged[-1][2])
    placed = {identity for identity, _, _ in merged if identity is not None}
    follows: tuple[str, str] | None = None  # the last line of `ours` already in the merge
    for content, _ in _split_lines(ours):
        identity = _identity(content)
        if identity is None:
            continue
        if identity not in before and identity not in placed:
            at = 0  # following nothing kept: at the top (a blank line's identity is None too)
            if follows is not None:
                at = next(i + 1 for i, line in enumerate(merged) if line[0] == follows)
            merged.insert(at, (identity, content, ending))
            placed.add(identity)
        if identity in placed:
            follows = identity
    lines = [(content, end or ending) for _, content, end in merged]
    if lines and not final_newline:
        lines[-1] = (lines[-1][0], "")
    return _join_lines(lines)


def _file_ending(lines: list[tuple[str, str]]) -> str:
    """The line ending a file uses: its last one (`\n` when it has none)."""
    return next((e for _, e in reversed(lines) if e), "\n")


def without_index_entry(text: str, filename: str) -> str:
    """`text` without the entries linking to `filename`; every other byte is kept.

    When the file did not end with a newline, it still does not. Raises `ValueError` for a bad
    `filename`, as `with_index_entry` does.
    """
    path = _clean_filename(filename)
    lines = _split_lines(text)
    return _remove_lines(lines, {i for i, (c, _) in enumerate(lines) if _matches(c, path)})


def without_entries_of(text: str, dropped: Callable[[str], bool]) -> str:
    """`text` without the entries whose file (`IndexEntry.path`) `dropped` names; every other
    byte is kept, lines counted as `parse_index_entries` counts them (only `\n` ends one)."""
    kept = []
    for content, ending in _split_lines(text):
        entry = _parse_line(0, content)
        if entry is None or entry.path is None or not dropped(entry.path):
            kept.append(content + ending)
    return "".join(kept)


# --- Files ------------------------------------------------------------------------------------


def _read_index_bytes(directory: str | os.PathLike[str]) -> bytes | None:
    try:
        return read_file(Path(directory) / INDEX_FILENAME)  # atime kept (docs/design.md §6a)
    except FileNotFoundError:
        return None


def read_index(directory: str | os.PathLike[str]) -> str:
    """The text of `directory`/MEMORY.md; "" when missing, invalid UTF-8 replaced by U+FFFD."""
    data = _read_index_bytes(directory)
    return "" if data is None else data.decode("utf-8", "replace")


def load_index(
    directory: str | os.PathLike[str],
    max_lines: int = MAX_INDEX_LINES,
    max_bytes: int = MAX_INDEX_BYTES,
) -> IndexTruncation:
    """`truncate_index(read_index(directory))`, remembered while MEMORY.md is unchanged (see
    `settled_signature`): every prompt an agent assembles loads the same index until someone
    edits it, and reading and measuring a large one costs more than the rest of the prompt."""
    path = Path(directory) / INDEX_FILENAME
    try:
        signature = settled_signature(path.stat())
    except FileNotFoundError:
        return truncate_index("", max_lines, max_bytes)
    if signature is None:
        return truncate_index(read_index(directory), max_lines, max_bytes)
    return _load_index(path, signature, max_lines, max_bytes)


@functools.lru_cache(maxsize=256)
def _load_index(
    path: Path, signature: tuple[int, ...], max_lines: int, max_bytes: int
) -> IndexTruncation:
    return truncate_index(read_index(path.parent), max_lines, max_bytes)


def _edit_index(directory: str | os.PathLike[str], edit: Callable[[str], str]) -> bool:
    data = _read_index_bytes(directory)
    # surrogateescape: bytes that are not UTF-8 survive the edit unchanged.
    text = "" if data is None else data.decode("utf-8", "surrogateescape")
    new = edit(text).encode("utf-8", "surrogateescape")
    if new == (data or b""):
        return False
    write_atomic_bytes(Path(directory) / INDEX_FILENAME, new)
    return True


def write_index_entry(directory: str | os.PathLike[str], filename: str, line: str) -> bool:
    """Set the entry for `filename` in `directory`/MEMORY.md to `line` (see `with_index_entry`).

    A missing MEMORY.md is created. The file is rewritten atomically, and only when it changes;
    bytes that are not valid UTF-8 are kept as they were. Returns whether it was written.
    """
    return _edit_index(directory, lambda text: with_index_entry(text, filename, line))


def delete_index_entry(directory: str | os.PathLike[str], filename: str) -> bool:
    """Remove the entries for `filename` from `directory`/MEMORY.md; whether it was written.

    A missing MEMORY.md stays missing.
    """
    if _read_index_bytes(directory) is None:
        _clean_filename(filename)
        return False
    return _edit_index(directory, lambda text: without_index_entry(text, filename))


# --- Health -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexHealth:
    """What is wrong with a directory's index, and how close it is to the caps.

    - `missing_targets`: entries whose link is a relative `.md` path with no file on disk (URLs
      and other link kinds are ignored).
    - `unindexed`: topic files (relative `/`-separated paths, as scanned) that no link in the
      index names; links anywhere in the file count, not only entries.
    - `long_entries`: entries longer than `MAX_ENTRY_CHARS` characters.
    - `line_fraction` / `byte_fraction`: share of each cap used (above 1.0 when over).
    - `invalid_utf8`: MEMORY.md is not valid UTF-8; it was read with U+FFFD replacements.
    """

    exists: bool
    invalid_utf8: bool
    line_count: int
    byte_count: int
    max_lines: int
    max_bytes: int
    was_line_truncated: bool
    was_byte_truncated: bool
    entries: tuple[IndexEntry, ...]
    missing_targets: tuple[IndexEntry, ...]
    unindexed: tuple[str, ...]
    long_entries: tuple[IndexEntry, ...]

    @property
    def line_fraction(self) -> float:
        return self.line_count / self.max_lines

    @property
    def byte_fraction(self) -> float:
        return self.byte_count / self.max_bytes

    @property
    def was_truncated(self) -> bool:
        return self.was_line_truncated or self.was_byte_truncated

    @property
    def ok(self) -> bool:
        return not (
            self.invalid_utf8
            or self.was_truncated
            or self.missing_targets
            or self.unindexed
            or self.long_entries
        )


@functools.lru_cache(maxsize=16)
def _entries_and_links(text: str) -> tuple[tuple[IndexEntry, ...], frozenset[str]]:
    """An index's entries and every file its lines link to. Remembered by text: the live
    mirror rescans a store after each burst of writes, mostly with the index unchanged."""
    linked = frozenset(
        path
        for content, _ in _split_lines(text)
        for _, target in _links(content)
        if (path := _link_path(target)) is not None
    )
    return tuple(parse_index_entries(text)), linked


def index_health(
    directory: str | os.PathLike[str],
    exclude: Iterable[str] = (),
    *,
    max_lines: int = MAX_INDEX_LINES,
    max_bytes: int = MAX_INDEX_BYTES,
    files: Iterable[str] | None = None,
) -> IndexHealth:
    """Check `directory`/MEMORY.md against the topic files on disk and the caps.

    `exclude` names top-level entries that are stores of their own (`("team",)` for a private
    store; the file rule of docs/design.md §6a leaves out the rest). `files`, the topic files'
    relative paths, saves a second scan when the caller has just scanned. A missing MEMORY.md
    is healthy-but-empty: every topic file is unindexed.
    """
    root = Path(directory)
    data = _read_index_bytes(root)
    invalid_utf8 = False
    if data is None:
        text = ""
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = data.decode("utf-8", "replace")
            invalid_utf8 = True
    truncation = truncate_index(text, max_lines, max_bytes)
    entries, linked = _entries_and_links(text)

    if files is None:
        files = [h.path for h in scan_memory_files(root, limit=None, exclude=tuple(exclude))]
    files = list(files)
    scanned = frozenset(files)  # found by the scan: no second stat of each
    missing = tuple(
        entry
        for entry in entries
        if entry.path is not None
        and entry.path.endswith(".md")
        and entry.path not in scanned
        and not (root / entry.path).is_file()
    )
    unindexed = tuple(
        path for path in files if path not in linked and posixpath.basename(path) != INDEX_FILENAME
    )
    return IndexHealth(
        exists=data is not None,
        invalid_utf8=invalid_utf8,
        line_count=truncation.line_count,
        byte_count=truncation.byte_count,
        max_lines=max_lines,
        max_bytes=max_bytes,
        was_line_truncated=truncation.was_line_truncated,
        was_byte_truncated=truncation.was_byte_truncated,
        entries=entries,
        missing_targets=missing,
        unindexed=tuple(sorted(unindexed)),
        long_entries=tuple(e for e in entries if e.length > MAX_ENTRY_CHARS),
    )
