import dataclasses
import os
import threading
from pathlib import Path

import pytest

from memapp.memdir import scan as scan_module
from memapp.memdir.scan import (
    MAX_HEAD_BYTES,
    MemoryHeader,
    ScanCache,
    detect_type_form,
    format_manifest,
    format_mtime,
    scan_memory_files,
)

# 2026-03-28T10:30:00.000Z
T0_MS = 1_774_693_800_000


def write(root: Path, rel: str, text: str | bytes, mtime_ms: int = T0_MS) -> Path:
    """Write a file with an exact mtime (and an older atime, which reading would refresh)."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    os.utime(path, ns=(mtime_ms * 1_000_000 - 10**12, mtime_ms * 1_000_000))
    return path


def memory(name: str, description: str | None = None, mtype: str | None = None) -> str:
    lines = [f"name: {name}"]
    if description is not None:
        lines.append(f"description: {description}")
    if mtype is not None:
        lines.append(f"type: {mtype}")
    return "---\n" + "\n".join(lines) + "\n---\nBody.\n"


def scan(root: Path, **kwargs) -> list[MemoryHeader]:
    kwargs.setdefault("cache", ScanCache())
    return scan_memory_files(str(root), **kwargs)


def paths(headers: list[MemoryHeader]) -> list[str]:
    return [header.path for header in headers]


# --- what is scanned ----------------------------------------------------------------------------


def test_it_reads_each_header(tmp_path):
    text = memory("Real DB", "Hit a real database", "feedback")
    write(tmp_path, "feedback_testing.md", text)
    write(tmp_path, "team/web/conventions.md", "---\nname: c\nmetadata: {type: project}\n---\n")

    assert scan(tmp_path) == [
        MemoryHeader(
            path="feedback_testing.md",
            mtime_ms=T0_MS,
            size=len(text),
            name="Real DB",
            description="Hit a real database",
            type="feedback",
            type_form="top",
            problem=None,
            has_frontmatter=True,
        ),
        MemoryHeader(
            path="team/web/conventions.md",
            mtime_ms=T0_MS,
            size=42,
            name="c",
            description=None,
            type="project",
            type_form="metadata",
            problem=None,
            has_frontmatter=True,
        ),
    ]


def test_it_lists_newest_first_with_ties_broken_by_path(tmp_path):
    write(tmp_path, "old.md", memory("old"), T0_MS - 86_400_000)
    write(tmp_path, "b.md", memory("b"), T0_MS)
    write(tmp_path, "a.md", memory("a"), T0_MS)
    write(tmp_path, "sub/new.md", memory("new"), T0_MS + 1)
    assert paths(scan(tmp_path)) == ["sub/new.md", "a.md", "b.md", "old.md"]


def test_sub_millisecond_differences_still_order_files(tmp_path):
    write(tmp_path, "a.md", "a")
    write(tmp_path, "b.md", "b")
    os.utime(tmp_path / "b.md", ns=(0, T0_MS * 1_000_000 + 1))
    assert paths(scan(tmp_path)) == ["b.md", "a.md"]


def test_it_keeps_200_by_default_and_all_with_no_limit(tmp_path):
    for i in range(205):
        write(tmp_path, f"m{i:03}.md", memory(f"m{i}"), T0_MS + i)
    headers = scan(tmp_path)
    assert len(headers) == 200
    assert headers[0].path == "m204.md" and headers[-1].path == "m005.md"
    assert len(scan(tmp_path, limit=None)) == 205
    assert paths(scan(tmp_path, limit=2)) == ["m204.md", "m203.md"]
    assert scan(tmp_path, limit=0) == []


def test_it_skips_every_index_and_non_markdown_file(tmp_path):
    write(tmp_path, "MEMORY.md", "- [a](a.md) — a")
    write(tmp_path, "team/MEMORY.md", "- [b](b.md) — b")
    write(tmp_path, "team/web/MEMORY.md", "- [c](c.md) — c")
    write(tmp_path, "a.md", memory("a"))
    write(tmp_path, "team/memory.md", memory("lowercase is a topic file"))
    write(tmp_path, "notes.txt", "not markdown")
    write(tmp_path, "upper.MD", "the client matches .md only")
    write(tmp_path, ".consolidate-lock", "123")
    assert paths(scan(tmp_path)) == ["a.md", "team/memory.md"]


def test_exclude_leaves_out_top_level_entries_only(tmp_path):
    write(tmp_path, "a.md", memory("a"))
    write(tmp_path, "team/t.md", memory("t"))
    write(tmp_path, "logs/2026/03/2026-03-28.md", "- did things")
    write(tmp_path, "notes/team/deep.md", memory("deep"))
    write(tmp_path, "logs.md", memory("a file named like an excluded dir is a file"))
    write(tmp_path, "notes/logs/deeper.md", memory("only the top-level logs/ holds daily logs"))
    assert paths(scan(tmp_path, exclude=("team",))) == [
        "a.md",
        "logs.md",
        "notes/logs/deeper.md",
        "notes/team/deep.md",
    ]
    # Daily logs are never memory files, whatever the store excludes.
    assert len(scan(tmp_path)) == 5


def test_a_missing_directory_is_empty(tmp_path):
    assert scan(tmp_path / "missing") == []
    write(tmp_path, "file.md", "x")
    assert scan(tmp_path / "file.md") == []


def test_symlinks_are_skipped(tmp_path):
    outside = tmp_path / "outside"
    write(outside, "secret.md", memory("secret"))
    store = tmp_path / "store"
    write(store, "a.md", memory("a"))
    (store / "linked.md").symlink_to(outside / "secret.md")
    (store / "linked-dir").symlink_to(outside)
    (store / "dangling.md").symlink_to(tmp_path / "nothing.md")
    assert paths(scan(store)) == ["a.md"]


def test_the_directory_itself_may_be_a_symlink(tmp_path):
    write(tmp_path / "real", "a.md", memory("a"))
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert paths(scan(tmp_path / "link")) == ["a.md"]


def test_a_directory_named_like_a_memory_is_walked(tmp_path):
    write(tmp_path, "odd.md/inner.md", memory("inner"))
    assert paths(scan(tmp_path)) == ["odd.md/inner.md"]


def test_an_unreadable_subdirectory_is_skipped(tmp_path, monkeypatch):
    write(tmp_path, "a.md", memory("a"))
    write(tmp_path, "locked/b.md", memory("b"))
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(scan_module.os, "open", refuse)
    assert paths(scan(tmp_path)) == ["a.md"]


# --- malformed files ----------------------------------------------------------------------------


def test_invalid_utf8_is_noted_and_still_scanned(tmp_path):
    write(tmp_path, "bad.md", b"---\nname: caf\xe9\ndescription: ok\n---\n")
    (header,) = scan(tmp_path)
    assert (header.name, header.description, header.problem) == ("caf\ufffd", "ok", "invalid UTF-8")


def test_a_binary_file_is_noted(tmp_path):
    write(tmp_path, "image.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (header,) = scan(tmp_path)
    assert (header.name, header.problem, header.has_frontmatter) == (None, "binary file", False)


def test_a_nul_byte_after_the_first_30_lines_does_not_count(tmp_path):
    write(tmp_path, "a.md", memory("a") + "line\n" * 40 + "\x00")
    (header,) = scan(tmp_path)
    assert (header.name, header.problem) == ("a", None)


def test_an_empty_file_has_no_frontmatter(tmp_path):
    write(tmp_path, "empty.md", b"")
    (header,) = scan(tmp_path)
    assert header == MemoryHeader("empty.md", T0_MS, 0, None, None, None, None, None, False)


def test_a_file_without_frontmatter_is_listed(tmp_path):
    write(tmp_path, "plain.md", "# Just notes\n")
    (header,) = scan(tmp_path)
    assert (header.has_frontmatter, header.problem, header.description) == (False, None, None)


def test_yaml_problems_are_kept(tmp_path):
    write(tmp_path, "a.md", "---\n- a list\n---\n", T0_MS)
    write(tmp_path, "b.md", "---\ndescription: @mention needs the retry\n---\n", T0_MS - 1)
    a, b = scan(tmp_path)
    assert a.problem == "frontmatter is not a mapping (it is a list)"
    assert (b.description, b.problem) == ("@mention needs the retry", None)


def test_only_the_first_30_lines_are_read(tmp_path):
    write(tmp_path, "late.md", "---\n" + "k: v\n" * 29 + "---\nbody\n")
    write(tmp_path, "ok.md", "---\n" + "k: v\n" * 28 + "---\nbody\n", T0_MS - 1)
    late, ok = scan(tmp_path)
    assert (late.has_frontmatter, late.problem) == (
        False,
        "header not closed within the first 30 lines",
    )
    assert (ok.has_frontmatter, ok.problem) == (True, None)


@pytest.fixture
def bytes_read(monkeypatch):
    """Count the bytes the scan reads from files."""
    counted = []
    real_read = os.read

    def read(fd, n):
        data = real_read(fd, n)
        counted.append(len(data))
        return data

    monkeypatch.setattr(scan_module.os, "read", read)
    return counted


def test_a_10_mb_file_costs_a_small_read(tmp_path, bytes_read):
    write(tmp_path, "big.md", memory("big", "d") + "word " * 2_000_000 + "\n" + "line\n" * 1000)
    (header,) = scan(tmp_path)
    assert (header.name, header.description, header.problem) == ("big", "d", None)
    assert header.size > 10_000_000
    assert sum(bytes_read) <= MAX_HEAD_BYTES


def test_a_10_mb_single_line_is_cut_at_the_byte_cap(tmp_path, bytes_read):
    write(tmp_path, "line.md", "---\nname: " + "é" * 5_000_000 + "\n---\n")
    (header,) = scan(tmp_path)
    assert sum(bytes_read) == MAX_HEAD_BYTES
    assert header.name is None
    assert header.problem == "the first 30 lines exceed 65536 bytes"


def test_a_10_mb_file_without_newlines_or_frontmatter_is_fine(tmp_path, bytes_read):
    write(tmp_path, "blob.md", "x" * 10_000_000)
    (header,) = scan(tmp_path)
    assert (header.has_frontmatter, header.problem) == (False, None)
    assert sum(bytes_read) == MAX_HEAD_BYTES


def test_an_unreadable_file_is_listed_with_the_reason(tmp_path, monkeypatch):
    # Tests may run as root, where chmod 000 does not stop reads: make open() fail instead.
    write(tmp_path, "locked.md", memory("locked"))
    real_open = os.open

    def refuse(path, flags, *args, **kwargs):
        if str(path).endswith("locked.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(scan_module.os, "open", refuse)
    (header,) = scan(tmp_path)
    assert (header.path, header.name, header.problem) == (
        "locked.md",
        None,
        "unreadable: Permission denied",
    )


def test_a_scan_changes_no_mtime_or_atime(tmp_path):
    files = [
        write(tmp_path, "a.md", memory("a")),
        write(tmp_path, "team/b.md", memory("b")),
        write(tmp_path, "MEMORY.md", "- [a](a.md) — a"),
    ]
    dirs = [tmp_path, tmp_path / "team"]
    before = {p: (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) for p in files + dirs}
    assert len(scan(tmp_path)) == 2
    after = {p: (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) for p in files + dirs}
    assert after == before


# --- incremental rescans --------------------------------------------------------------------------


def test_an_unchanged_rescan_opens_no_file(tmp_path, monkeypatch):
    for i in range(5):
        write(tmp_path, f"sub{i % 2}/m{i}.md", memory(f"m{i}"), T0_MS + i)
    cache = ScanCache()
    first = scan(tmp_path, cache=cache)
    assert (cache.hits, cache.misses) == (0, 5)

    real_open = os.open

    def directories_only(path, flags, *args, **kwargs):
        assert flags & os.O_DIRECTORY, f"a rescan opened {path}"
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(scan_module.os, "open", directories_only)
    assert scan(tmp_path, cache=cache) == first
    assert (cache.hits, cache.misses) == (5, 5)
    assert paths(scan(tmp_path, cache=cache, limit=2)) == ["sub0/m4.md", "sub1/m3.md"]


def test_results_can_be_changed_by_the_caller_without_harm(tmp_path):
    write(tmp_path, "a.md", memory("a"))
    cache = ScanCache()
    scan(tmp_path, cache=cache, limit=None).clear()
    assert paths(scan(tmp_path, cache=cache, limit=None)) == ["a.md"]


def test_a_changed_file_is_read_again(tmp_path):
    path = write(tmp_path, "a.md", memory("a", "first"))
    write(tmp_path, "b.md", memory("b"))
    cache = ScanCache()
    scan(tmp_path, cache=cache)

    os.utime(path, ns=(0, (T0_MS + 5) * 1_000_000))  # mtime only
    assert scan(tmp_path, cache=cache)[0].mtime_ms == T0_MS + 5
    assert (cache.hits, cache.misses) == (1, 3)

    path.write_text(memory("a", "second, longer"))  # size
    os.utime(path, ns=(0, T0_MS * 1_000_000))
    assert [h.description for h in scan(tmp_path, cache=cache) if h.path == "a.md"] == [
        "second, longer"
    ]
    assert cache.misses == 4


def test_a_rewrite_with_the_same_size_and_restored_mtime_is_noticed(tmp_path):
    path = write(tmp_path, "a.md", memory("a", "11111"))
    cache = ScanCache()
    scan(tmp_path, cache=cache)
    stat = os.stat(path)
    path.write_text(memory("a", "22222"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(path).st_size == stat.st_size
    assert scan(tmp_path, cache=cache)[0].description == "22222"


def test_new_and_deleted_files_are_seen_and_deleted_ones_forgotten(tmp_path):
    write(tmp_path, "a.md", memory("a"))
    gone = write(tmp_path, "gone.md", memory("gone"))
    cache = ScanCache()
    scan(tmp_path, cache=cache)
    assert len(cache) == 2

    gone.unlink()
    write(tmp_path, "new.md", memory("new"), T0_MS + 1)
    assert paths(scan(tmp_path, cache=cache)) == ["new.md", "a.md"]
    assert len(cache) == 2
    assert (cache.hits, cache.misses) == (1, 3)


def test_the_cache_keeps_a_bounded_number_of_directories(tmp_path):
    cache = ScanCache(max_directories=2)
    for name in ("one", "two", "three"):
        write(tmp_path / name, "a.md", memory(name))
        scan(tmp_path / name, cache=cache)
    assert len(cache) == 2
    scan(tmp_path / "one", cache=cache)
    assert cache.misses == 4  # "one" had been dropped


def test_scans_with_different_excludes_do_not_evict_each_other(tmp_path):
    write(tmp_path, "a.md", memory("a"))
    write(tmp_path, "team/t.md", memory("t"))
    cache = ScanCache()
    scan(tmp_path, cache=cache)
    scan(tmp_path, cache=cache, exclude=["team"])
    scan(tmp_path, cache=cache)
    assert cache.misses == 3


def test_the_default_cache_is_used_without_one(tmp_path):
    write(tmp_path, "a.md", memory("a"))
    default = scan_module._default_cache
    misses = default.misses
    scan_memory_files(tmp_path)
    scan_memory_files(tmp_path)
    assert default.misses == misses + 1


def test_concurrent_scans_agree(tmp_path):
    for i in range(50):
        write(tmp_path, f"d{i % 5}/m{i}.md", memory(f"m{i}", f"d{i}"), T0_MS + i)
    cache = ScanCache()
    expected = scan(tmp_path, cache=ScanCache(), limit=None)
    results = []

    def worker():
        for _ in range(20):
            results.append(scan_memory_files(tmp_path, limit=None, cache=cache))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == expected for result in results)
    assert cache.hits + cache.misses == 80 * 50


# --- the manifest -------------------------------------------------------------------------------


def test_the_manifest_matches_the_design_format(tmp_path):
    write(tmp_path, "feedback_testing.md", memory("t", "Tests hit a real database", "feedback"))
    write(tmp_path, "team/notes.md", memory("n", "Shared notes"), T0_MS - 1)
    write(tmp_path, "untitled.md", memory("u"), T0_MS - 86_400_000 + 7)
    write(tmp_path, "empty-description.md", memory("e", "''", "user"), T0_MS - 86_400_000 * 400)

    assert format_manifest(scan(tmp_path)) == (
        "- [feedback] feedback_testing.md (2026-03-28T10:30:00.000Z): Tests hit a real database\n"
        "- team/notes.md (2026-03-28T10:29:59.999Z): Shared notes\n"
        "- untitled.md (2026-03-27T10:30:00.007Z)\n"
        "- [user] empty-description.md (2025-02-21T10:30:00.000Z)"
    )


def test_the_manifest_keeps_each_header_on_one_line():
    header = MemoryHeader("a.md", T0_MS, 1, None, "two\nlines\r\nhere", "user", "top", None)
    assert format_manifest([header]) == "- [user] a.md (2026-03-28T10:30:00.000Z): two lines here"


def test_an_empty_manifest_is_empty():
    assert format_manifest([]) == ""


@pytest.mark.parametrize(
    ("mtime_ms", "text"),
    [
        (T0_MS, "2026-03-28T10:30:00.000Z"),
        (T0_MS + 1, "2026-03-28T10:30:00.001Z"),
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ],
)
def test_times_are_utc_iso_8601_with_milliseconds(mtime_ms, text):
    assert format_mtime(mtime_ms) == text


# --- the form a directory uses --------------------------------------------------------------------


def write_at(path, text, mtime):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.utime(path, (mtime, mtime))


def header_of(*lines: str) -> str:
    return "---\n" + "".join(f"{line}\n" for line in lines) + "---\nbody\n"


def test_a_new_directory_uses_the_top_level_form(tmp_path):
    assert detect_type_form(str(tmp_path)) == "top"
    assert detect_type_form(str(tmp_path / "missing")) == "top"


def test_the_form_most_files_use_wins(tmp_path):
    write_at(tmp_path / "a.md", header_of("metadata: {type: user}"), 1000)
    write_at(tmp_path / "b.md", header_of("metadata:", "  type: project"), 1001)
    write_at(tmp_path / "c.md", header_of("type: user"), 1002)
    write_at(tmp_path / "d.md", header_of("name: untyped"), 1003)
    assert detect_type_form(str(tmp_path)) == "metadata"


def test_on_a_tie_the_newest_file_decides(tmp_path):
    write_at(tmp_path / "a.md", header_of("metadata: {type: user}"), 1000)
    write_at(tmp_path / "b.md", header_of("type: user"), 2000)
    assert detect_type_form(str(tmp_path)) == "top"
    write_at(tmp_path / "a.md", header_of("metadata: {type: user}"), 3000)
    assert detect_type_form(str(tmp_path)) == "metadata"


def test_files_in_subdirectories_do_not_count(tmp_path):
    (tmp_path / "team").mkdir()
    write_at(tmp_path / "team" / "a.md", header_of("metadata: {type: user}"), 1000)
    write_at(tmp_path / "team" / "b.md", header_of("metadata: {type: user}"), 1000)
    write_at(tmp_path / "c.md", header_of("type: user"), 1000)
    assert detect_type_form(str(tmp_path)) == "top"
    assert detect_type_form(str(tmp_path / "team")) == "metadata"


HEADS = {
    "plain": memory("A", "one line", "user"),
    "no header": "Just text.\n",
    "thirty lines and more": "---\nname: N\n" + "x: y\n" * 40 + "---\nbody\n",
    "not closed in 30 lines": "---\nname: N\n" + "\n" * 40,
    "a long first line": "---\nname: " + "w" * 70_000 + "\n---\n",
    "few lines past 8 KB": "---\nname: N\ndescription: " + "d" * 9_000 + "\n---\nbody\n",
    "binary": b"\x00\x01---\nname: N\n",
    "a character cut by the byte cap": "---\nname: " + "é" * 40_000 + "\n---\n",
    "a BOM": "\ufeff" + memory("B", "bom"),
}


@pytest.mark.parametrize("case", HEADS)
def test_a_writer_gets_the_header_a_scan_reads(tmp_path, case):
    write(tmp_path, "m.md", HEADS[case])
    [scanned] = scan_memory_files(tmp_path, limit=None, cache=ScanCache())
    data = (tmp_path / "m.md").read_bytes()
    known = scan_module.header_of("m.md", data)
    assert dataclasses.replace(known, mtime_ms=scanned.mtime_ms) == scanned
    assert known.body_start == scanned.body_start


def test_a_known_file_is_not_read_while_it_is_as_written(tmp_path, monkeypatch):
    path = write(tmp_path, "m.md", memory("Old"))
    cache = ScanCache()
    scan_module.scan_store(tmp_path, cache=cache)
    data = memory("New").encode()
    path.write_bytes(data)
    known = {
        "m.md": scan_module.KnownFile.written(scan_module.header_of("m.md", data), path.stat())
    }
    monkeypatch.setattr(scan_module, "_read_header", None)  # any read would fail
    [header] = scan_module.scan_store(tmp_path, cache=cache, known=known).ordered
    assert header is known["m.md"].header and header.name == "New"
    assert header.mtime_ms == path.stat().st_mtime_ns // 1_000_000
