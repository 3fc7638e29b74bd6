"""Gemini CLI's `/memory inbox` patches, read as whole files memhub can propose (docs/design.md
§28).

With `experimental.autoMemory` on, Gemini CLI's background extraction writes unified diffs under
`<memory dir>/.inbox/private/` (targets in the project's memory dir) and `.inbox/global/`
(target `~/.gemini/GEMINI.md`, which is no memhub store). Its own reader is jsdiff's
`parsePatch`; Gemini writes a small subset of what that accepts, and this parser takes that
subset strictly: `--- <abs path>` / `+++ <abs path>` (`/dev/null` for a new file), `@@ -a,b
+c,d @@` hunks whose line counts must add up, ` `/`-`/`+` lines and `\\ No newline at end of
file`. Anything else is a `PatchError` with a reason for a person, never a guess. A hunk must
match the file exactly (at the line it names, or the nearest place its lines are found, as
jsdiff places it), so a patch written against another version of a file does not apply.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from memapp.memdir.store_files import FileRejected, entry_path

__all__ = [
    "INBOX_DIR",
    "MAX_PATCH_BYTES",
    "FilePatch",
    "Hunk",
    "PatchError",
    "apply_hunks",
    "clear_inbox_patch",
    "inbox_patch_files",
    "parse_patch",
    "patched_files",
    "read_patch",
]

INBOX_DIR = ".inbox/private"  # the kind whose targets live in the store; `global` never does
MAX_PATCH_BYTES = 1_000_000
DEV_NULL = "/dev/null"
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_LINES = re.compile(r"[^\n]*\n|[^\n]+\Z")


class PatchError(ValueError):
    """A patch memhub cannot propose; the message says why, for the person reviewing.
    `sha256` is the patch file's hash when it was read, so a refused patch is counted once."""

    def __init__(self, message: str, sha256: str = "") -> None:
        super().__init__(message)
        self.sha256 = sha256


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_lines: tuple[str, ...]  # each with its "\n", unless the file ends without one
    new_lines: tuple[str, ...]


@dataclass(frozen=True)
class FilePatch:
    old_path: str
    new_path: str
    hunks: tuple[Hunk, ...]

    @property
    def target(self) -> str:
        return self.new_path

    @property
    def is_new(self) -> bool:
        return self.old_path == DEV_NULL


def _header_path(line: str, marker: str, number: int) -> str:
    if not line.startswith(marker):
        raise PatchError(f"line {number}: expected a '{marker}' header")
    path = line[len(marker) :].split("\t", 1)[0].strip()
    if not path:
        raise PatchError(f"line {number}: a header without a path")
    return path


def _hunk(lines: list[str], at: int) -> tuple[Hunk, int]:
    """The hunk whose `@@` line is `lines[at]`, and the index after it."""
    match = _HUNK.fullmatch(lines[at].rstrip())
    if match is None:
        raise PatchError(f"line {at + 1}: not a hunk header: {lines[at][:80]!r}")
    old_start, old_count, _, new_count = (
        int(group) if group is not None else 1 for group in match.groups()
    )
    body: list[list[str]] = []
    old = new = 0
    i = at + 1
    while i < len(lines) and (old < old_count or new < new_count):
        line = lines[i]
        kind, text = (line[:1] or " "), line[1:]  # an empty line: context whose space was lost
        if kind == "\\":
            if not body:
                raise PatchError(f"line {i + 1}: a no-newline marker after no line")
            body[-1][2] = ""
        elif kind in " -+":
            body.append([kind, text, "\n"])
            old += kind != "+"
            new += kind != "-"
        else:
            break
        i += 1
    if i < len(lines) and lines[i].startswith("\\") and body:
        body[-1][2] = ""
        i += 1
    if (old, new) != (old_count, new_count):
        raise PatchError(
            f"line {at + 1}: the hunk says {old_count} old and {new_count} new lines, "
            f"but holds {old} and {new}"
        )
    pairs = tuple((kind, text + end) for kind, text, end in body)
    return (
        Hunk(
            old_start,
            tuple(text for kind, text in pairs if kind != "+"),
            tuple(text for kind, text in pairs if kind != "-"),
        ),
        i,
    )


def parse_patch(text: str) -> list[FilePatch]:
    """The file patches of a unified diff, in order; PatchError for anything Gemini CLI does not
    write: a header pair missing, a hunk whose counts do not add up, a file without hunks, a
    deletion, an update whose two headers differ, or no file at all."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    patches: list[FilePatch] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("--- "):
            i += 1  # preamble (`diff …`, `Index:`, `===`), as jsdiff skips it
            continue
        old_path = _header_path(lines[i], "--- ", i + 1)
        if i + 1 >= len(lines):
            raise PatchError(f"line {i + 1}: a '--- ' header without its '+++ ' line")
        new_path = _header_path(lines[i + 1], "+++ ", i + 2)
        i += 2
        hunks = []
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = _hunk(lines, i)
            hunks.append(hunk)
        if not hunks:
            raise PatchError(f"{new_path}: no hunks")
        if new_path == DEV_NULL:
            raise PatchError(f"{old_path}: a deletion, which Gemini CLI's inbox never proposes")
        if old_path not in (DEV_NULL, new_path):
            raise PatchError(f"{new_path}: its two headers name different files ({old_path})")
        patches.append(FilePatch(old_path, new_path, tuple(hunks)))
    if not patches:
        raise PatchError("no '--- ' / '+++ ' file headers: not a unified diff")
    return patches


def _find(source: list[str], old: tuple[str, ...], want: int, start: int) -> int | None:
    """Where `old` lies in `source` at or after `start`, nearest to `want`."""
    last = len(source) - len(old)
    for offset in range(max(want - start, last - want, 0) + 1):
        for at in (want - offset, want + offset):
            if start <= at <= last and tuple(source[at : at + len(old)]) == old:
                return at
    return None


def apply_hunks(source: str, patch: FilePatch) -> str:
    """`source` with `patch`'s hunks applied; PatchError when a hunk's lines are not there."""
    lines = _LINES.findall(source)
    out: list[str] = []
    pos = 0
    for number, hunk in enumerate(patch.hunks, 1):
        want = hunk.old_start - 1 if hunk.old_lines else hunk.old_start
        at = _find(lines, hunk.old_lines, max(want, pos), pos)
        if at is None:
            raise PatchError(
                f"{patch.target}: hunk {number} does not apply: the file no longer holds "
                f"its lines at line {hunk.old_start}"
            )
        out += lines[pos:at]
        out += hunk.new_lines
        pos = at + len(hunk.old_lines)
    out += lines[pos:]
    return "".join(out)


def _key(target: str, memory_dir: Path, exclude: Collection[str]) -> str:
    """The store key of a patch's absolute target, or PatchError when it lies outside the
    store or breaks the key rules (docs/design.md §4)."""
    if not target.startswith("/"):
        raise PatchError(f"{target}: not an absolute path, as Gemini CLI writes them")
    norm = posixpath.normpath(target)
    for root in dict.fromkeys((str(memory_dir), os.path.realpath(memory_dir))):
        if norm.startswith(root.rstrip("/") + "/"):
            key = norm[len(root.rstrip("/")) + 1 :]
            try:
                entry_path(memory_dir, key, exclude)
            except FileRejected as exc:
                raise PatchError(f"{target}: {exc}") from None
            return key
    raise PatchError(f"{target}: outside this store ({memory_dir}), so memhub cannot write it")


def patched_files(
    patches: list[FilePatch],
    memory_dir: Path,
    read: Callable[[str], bytes | None],
    exclude: Collection[str] = (),
) -> dict[str, tuple[bytes | None, str]]:
    """Per store key: the file as it is now (`read(key)`, None when absent) and as the patches
    leave it. PatchError when a target is outside the store, a new file exists already, an
    update's file is missing or not UTF-8, or a hunk does not apply."""
    result: dict[str, tuple[bytes | None, str]] = {}
    for patch in patches:
        key = _key(patch.target, memory_dir, exclude)
        if key in result:
            before, text = result[key]
        else:
            before = read(key)
            if patch.is_new and before is not None:
                raise PatchError(f"{patch.target}: proposed as a new file, but it exists")
            if not patch.is_new and before is None:
                raise PatchError(f"{patch.target}: the file to update does not exist")
            try:
                text = (before or b"").decode("utf-8")
            except UnicodeDecodeError:
                raise PatchError(f"{patch.target}: the file is not UTF-8") from None
        result[key] = (before, apply_hunks(text, patch))
    return result


def inbox_patch_files(memory_dir: Path) -> list[Path]:
    """Every `*.patch` under `.inbox/private/` (Gemini CLI lists them all, not only
    `extraction.patch`), sorted; symlinks are not followed."""
    found = []
    for folder, dirs, files in os.walk(memory_dir / INBOX_DIR):
        dirs.sort()
        found += [
            Path(folder) / name
            for name in files
            if name.endswith(".patch") and not (Path(folder) / name).is_symlink()
        ]
    return sorted(found)


def read_patch(path: Path) -> tuple[str, str]:
    """The patch's content hash (`sha256:…` of every byte, however large) and its text;
    PatchError (with the hash) for a file over MAX_PATCH_BYTES, binary (NUL) or not UTF-8. An
    unreadable file raises OSError."""
    digest = hashlib.sha256()
    head = b""
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 16):
            digest.update(chunk)
            if len(head) <= MAX_PATCH_BYTES:
                head += chunk
    sha = "sha256:" + digest.hexdigest()
    if len(head) > MAX_PATCH_BYTES:
        raise PatchError(f"over {MAX_PATCH_BYTES:,} bytes: too large for a memory patch", sha)
    if b"\0" in head:
        raise PatchError("binary content (NUL bytes), not a unified diff", sha)
    try:
        return sha, head.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchError(f"not UTF-8 (byte {exc.start})", sha) from None


def clear_inbox_patch(path: Path, sha256: str) -> bool:
    """Remove Gemini CLI's patch file once memhub applied it (as Gemini's own apply does, by
    unlinking it: one atomic step), but only while it still holds the patch that was applied:
    a patch Gemini rewrote since is a new proposal, never lost. True when removed."""
    try:
        if read_patch(path)[0] != sha256:
            return False
    except (OSError, PatchError):
        return False
    path.unlink(missing_ok=True)
    return True
