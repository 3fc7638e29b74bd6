import os
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from memapp.memdir.index import (
    INDEX_FILENAME,
    MAX_ENTRY_CHARS,
    MAX_INDEX_BYTES,
    MAX_INDEX_LINES,
    IndexTruncation,
    delete_index_entry,
    format_index_entry,
    format_size,
    index_health,
    load_index,
    merge_index,
    parse_index_entries,
    read_index,
    truncate_index,
    with_index_entry,
    without_index_entry,
    write_index_entry,
)

HINT = "Keep index entries to one line under ~200 chars; move detail into topic files."


def warning(reason: str) -> str:
    return f"\n\n> WARNING: MEMORY.md is {reason}. Only part of it was loaded. {HINT}"


def entry_lines(count: int) -> list[str]:
    return [f"- [Memory {i}](m{i}.md) — hook {i}" for i in range(1, count + 1)]


# --- format_size ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("num_bytes", "words"),
    [
        (0, "0 bytes"),
        (1023, "1023 bytes"),
        (1024, "1KB"),
        (1280, "1.3KB"),  # 1.25 rounds half up, as the client's toFixed does
        (1536, "1.5KB"),
        (4096, "4KB"),
        (25_000, "24.4KB"),
        (29_999, "29.3KB"),
        (1024 * 1024 - 1, "1024KB"),
        (1024 * 1024, "1MB"),
        (5 * 1024**3, "5GB"),
        (5 * 1024**4, "5120GB"),
    ],
)
def test_format_size(num_bytes, words):
    assert format_size(num_bytes) == words


# --- truncate_index ---------------------------------------------------------------------------


def test_the_caps_are_the_clients():
    assert (MAX_INDEX_LINES, MAX_INDEX_BYTES, INDEX_FILENAME) == (200, 25_000, "MEMORY.md")
    assert MAX_ENTRY_CHARS == 200


def test_an_index_under_the_caps_is_only_trimmed():
    text = "\n\n- [User role](user_role.md) — Ana is a data engineer\n\n"
    assert truncate_index(text) == IndexTruncation(
        content="- [User role](user_role.md) — Ana is a data engineer",
        line_count=1,
        byte_count=len("- [User role](user_role.md) — Ana is a data engineer".encode()),
        was_line_truncated=False,
        was_byte_truncated=False,
    )


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t\n"])
def test_an_empty_index_has_no_lines_and_no_bytes(text):
    result = truncate_index(text)
    assert result == IndexTruncation("", 0, 0, False, False)
    assert not result.was_truncated


def test_a_byte_order_mark_is_trimmed_like_whitespace():
    assert truncate_index("\ufeff- [A](a.md)\n") == IndexTruncation(
        "- [A](a.md)", 1, 11, False, False
    )


def test_crlf_lines_are_counted_by_their_newlines():
    result = truncate_index("a\r\nb\r\n")
    assert (result.content, result.line_count, result.byte_count) == ("a\r\nb", 2, 4)


def test_load_index_is_the_truncated_index_and_follows_every_edit(tmp_path):
    index = tmp_path / INDEX_FILENAME
    assert load_index(tmp_path) == IndexTruncation("", 0, 0, False, False)
    lines = [f"- [Topic {i:03}](topic_{i:03}.md) — hook {i:03}" for i in range(300)]
    index.write_text("\n".join(lines), encoding="utf-8")
    first = load_index(tmp_path)
    assert first == truncate_index(index.read_text(encoding="utf-8"))
    assert first.line_count == 300 and first.content.startswith(lines[0])
    # Rewritten in place at once with the same size: the mtime may not even tick.
    index.write_text("\n".join(line.replace("hook", "HOOK") for line in lines), encoding="utf-8")
    assert "HOOK 000" in load_index(tmp_path).content
    assert load_index(tmp_path, max_lines=10).line_count == 300
    assert load_index(tmp_path, max_lines=10).content.count("\n") == 11  # 10 lines + warning
    index.unlink()
    assert load_index(tmp_path).content == ""


def test_load_index_remembers_a_settled_index_until_it_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr("memapp.memdir.store_files.SETTLED_NS", 0)  # every file counts as settled
    (tmp_path / INDEX_FILENAME).write_text("- [A](a.md) — first\n", encoding="utf-8")
    assert load_index(tmp_path).content == "- [A](a.md) — first"
    replacement = tmp_path / "new.md"
    replacement.write_text("- [B](b.md) — second\n", encoding="utf-8")
    replacement.replace(tmp_path / INDEX_FILENAME)  # as atomic writes do: a new inode
    assert load_index(tmp_path).content == "- [B](b.md) — second"


def test_exactly_200_lines_is_not_truncated():
    text = "\n".join(entry_lines(200)) + "\n"
    result = truncate_index(text)
    assert result.content == text.strip()
    assert (result.line_count, result.was_line_truncated, result.was_byte_truncated) == (
        200,
        False,
        False,
    )


def test_exactly_25000_bytes_is_not_truncated():
    text = ("x" * 249 + "\n") * 99 + "x" * 250  # 100 lines: 24,750 + 250 bytes
    assert len(text.encode()) == 25_000
    assert truncate_index(text + "\n") == IndexTruncation(text, 100, 25_000, False, False)
    small = ("x" * 124 + "\n") * 199 + "x" * 125  # 200 lines, 25,000 bytes
    assert truncate_index(small) == IndexTruncation(small, 200, 25_000, False, False)


def test_201_lines_are_cut_to_200():
    lines = entry_lines(201)
    result = truncate_index("\n".join(lines) + "\n")
    assert result.content == "\n".join(lines[:200]) + warning("201 lines (limit: 200)")
    assert result.content.endswith(
        "- [Memory 200](m200.md) — hook 200\n\n"
        "> WARNING: MEMORY.md is 201 lines (limit: 200). Only part of it was loaded. "
        "Keep index entries to one line under ~200 chars; move detail into topic files."
    )
    assert (result.line_count, result.was_line_truncated, result.was_byte_truncated) == (
        201,
        True,
        False,
    )
    assert result.byte_count == len(("\n".join(lines)).encode())
    assert result.was_truncated


def test_long_lines_are_cut_at_the_last_newline_before_the_byte_cap():
    line = "x" * 299
    text = "\n".join([line] * 100)  # 100 lines, 29,999 bytes; newline k at byte 300k + 299
    result = truncate_index(text)
    assert result.content == "\n".join([line] * 83) + warning(
        "29.3KB (limit: 24.4KB) — index entries are too long"
    )
    assert result == IndexTruncation(result.content, 100, 29_999, False, True)


def test_a_newline_exactly_at_the_byte_cap_is_a_cut_point():
    text = "a" * 25_000 + "\n" + "b" * 10
    result = truncate_index(text)
    assert result.content == "a" * 25_000 + warning(
        "24.4KB (limit: 24.4KB) — index entries are too long"
    )
    assert (result.line_count, result.byte_count) == (2, 25_011)


def test_both_caps_fire():
    line = "y" * 149
    text = "\n".join([line] * 250)  # 250 lines, 37,499 bytes
    result = truncate_index(text)
    # 200 lines are still 29,999 bytes: cut at the newline at byte 150 * 165 + 149 = 24,899.
    assert result.content == "\n".join([line] * 166) + warning("250 lines and 36.6KB")
    assert result == IndexTruncation(result.content, 250, 37_499, True, True)


def test_many_lines_within_the_bytes_name_only_lines():
    text = "\n".join(["z" * 99] * 300)  # 300 lines, 29,999 bytes; 200 lines fit the bytes
    result = truncate_index(text)
    assert result.content == "\n".join(["z" * 99] * 200) + warning("300 lines and 29.3KB")
    assert (result.was_line_truncated, result.was_byte_truncated) == (True, True)


def test_without_a_newline_the_cut_is_hard():
    result = truncate_index("a" * 30_000)
    assert result.content == "a" * 25_000 + warning(
        "29.3KB (limit: 24.4KB) — index entries are too long"
    )
    assert (result.line_count, result.byte_count) == (1, 30_000)


def test_a_hard_cut_never_splits_a_character():
    result = truncate_index("€" * 9000)  # 3 bytes each: byte 25,000 is inside the 8,334th
    body = result.content.split("\n\n> WARNING")[0]
    assert body == "€" * 8333
    assert len(body.encode()) == 24_999
    assert (result.line_count, result.byte_count) == (1, 27_000)
    assert result.content.endswith(warning("26.4KB (limit: 24.4KB) — index entries are too long"))


def test_multibyte_lines_are_measured_in_bytes_not_characters():
    text = "\n".join(["é" * 100] * 130)  # 13,129 characters, 26,129 bytes
    result = truncate_index(text)
    assert result.byte_count == 26_129
    assert result.was_byte_truncated
    # newline k sits at byte 201k + 200; the last one within 25,000 is k = 123.
    assert result.content.split("\n\n> ")[0] == "\n".join(["é" * 100] * 124)


def test_custom_caps():
    result = truncate_index("a\nb\nc", max_lines=2, max_bytes=10)
    assert result.content == "a\nb" + warning("3 lines (limit: 2)")


@given(st.text(alphabet="ab \n\r€😀", max_size=400), st.integers(1, 20), st.integers(1, 120))
def test_truncation_respects_both_caps(text, max_lines, max_bytes):
    result = truncate_index(text, max_lines, max_bytes)
    trimmed = text.strip()
    assert result.line_count == (trimmed.count("\n") + 1 if trimmed else 0)
    assert result.byte_count == len(trimmed.encode())
    if not result.was_truncated:
        assert result.content == trimmed
        return
    body = result.content.rpartition("\n\n> WARNING: MEMORY.md is ")[0]
    assert trimmed.startswith(body)
    assert body.count("\n") < max_lines
    assert len(body.encode()) <= max_bytes


# --- entries ----------------------------------------------------------------------------------


def test_format_index_entry():
    assert format_index_entry(
        "Integration tests use a real database", "feedback_testing.md", "Hit a real DB, not mocks"
    ) == (
        "- [Integration tests use a real database](feedback_testing.md) — Hit a real DB, not mocks"
    )


def test_format_index_entry_keeps_title_and_hook_on_one_line():
    assert format_index_entry(" Use [x]\n now\\ ", "team/a.md", "first\nsecond\r\n third ") == (
        "- [Use \\[x\\] now\\\\](team/a.md) — first second third"
    )


def test_format_index_entry_fallbacks():
    assert format_index_entry("", "a.md", "") == "- [a.md](a.md)"
    assert format_index_entry("Title", "./a.md") == "- [Title](a.md)"
    assert format_index_entry("T", "my notes (old).md", "h") == "- [T](<my notes (old).md>) — h"


@pytest.mark.parametrize(
    "filename",
    [
        "",
        ".",
        "../x.md",
        "a/../../x.md",
        "/abs.md",
        "a\\b.md",
        "MEMORY.md",
        "team/MEMORY.md",
        "a#b.md",
        "a\nb.md",
        "https://example.com/a.md",
        "a//b.md",
    ],
)
def test_bad_filenames_are_refused(filename):
    with pytest.raises(ValueError):
        format_index_entry("T", filename, "h")
    with pytest.raises(ValueError):
        with_index_entry("", filename, "- [T](x.md)")
    with pytest.raises(ValueError):
        without_index_entry("", filename)


INDEX = (
    "# Memory index\n"
    "\n"
    "- [User role](user_role.md) — Ana is a data engineer\n"
    "* [Testing](./feedback_testing.md): real DB\n"
    "1. [Deploys](<project deploys.md>) – Friday freeze\n"
    "- [Docs](https://example.com/docs) — external\n"
    "- plain item without a link\n"
    "See [prose](prose.md) for more.\n"
    '  - [Nested \\[x\\]](team/nested.md#why "title")\n'
    "- ![img](pic.md)\n"
)


def test_parse_index_entries():
    entries = parse_index_entries(INDEX)
    assert [(e.line_number, e.title, e.target, e.path, e.hook) for e in entries] == [
        (3, "User role", "user_role.md", "user_role.md", "Ana is a data engineer"),
        (4, "Testing", "./feedback_testing.md", "feedback_testing.md", "real DB"),
        (5, "Deploys", "project deploys.md", "project deploys.md", "Friday freeze"),
        (6, "Docs", "https://example.com/docs", None, "external"),
        (9, "Nested [x]", "team/nested.md#why", "team/nested.md", ""),
    ]
    first = entries[0]
    assert first.raw == "- [User role](user_role.md) — Ana is a data engineer"
    assert first.length == len(first.raw) == 52


def test_parse_strips_crlf_from_raw():
    [entry] = parse_index_entries("- [A](a.md) — x\r\n")
    assert entry.raw == "- [A](a.md) — x"
    assert entry.hook == "x"


def test_links_outside_the_directory_have_no_path():
    text = "- [a](/etc/a.md)\n- [b](../b.md)\n- [c](mailto:x@y.z)\n- [d](.)\n"
    assert [e.path for e in parse_index_entries(text)] == [None, None, None, None]


@given(st.text(), st.text(), st.sampled_from(["a.md", "team/b c.md", "x(1).md"]))
def test_format_then_parse_round_trips(title, hook, filename):
    line = format_index_entry(title, filename, hook)
    assert "\n" not in line and "\r" not in line
    [entry] = parse_index_entries(line)
    one_line = re.compile(r"\s+")
    assert entry.title == (one_line.sub(" ", title).strip() or filename)
    assert entry.hook == one_line.sub(" ", hook).strip()
    assert entry.path == filename


def test_upsert_appends_to_a_file_ending_with_a_newline():
    line = "- [New](new.md) — hook"
    assert with_index_entry(INDEX, "new.md", line) == INDEX + line + "\n"


def test_upsert_appends_to_a_file_without_a_final_newline():
    line = "- [New](new.md) — hook"
    assert with_index_entry("# Index\n- [A](a.md)", "new.md", line) == (
        "# Index\n- [A](a.md)\n" + line
    )


def test_upsert_into_an_empty_file():
    assert with_index_entry("", "a.md", "- [A](a.md)") == "- [A](a.md)\n"


def test_upsert_appends_with_the_files_crlf():
    text = "# Index\r\n- [A](a.md)\r\n"
    assert with_index_entry(text, "b.md", "- [B](b.md)") == text + "- [B](b.md)\r\n"
    assert with_index_entry(text[:-2], "b.md", "- [B](b.md)") == text + "- [B](b.md)"


def test_upsert_replaces_in_place_keeping_every_other_byte():
    text = "# Index\r\n\r\n- [A](a.md) — old\r\n* other format: b.md\n- [C](c.md)"
    assert with_index_entry(text, "a.md", "- [A](a.md) — new") == (
        "# Index\r\n\r\n- [A](a.md) — new\r\n* other format: b.md\n- [C](c.md)"
    )
    assert with_index_entry(text, "c.md", "- [C2](c.md) — h") == (
        "# Index\r\n\r\n- [A](a.md) — old\r\n* other format: b.md\n- [C2](c.md) — h"
    )


@pytest.mark.parametrize(
    "written", ["./a.md", "<a.md>", "a.md#section", "././a.md", "sub/../a.md", 'a.md "t"']
)
def test_upsert_matches_other_spellings_of_the_link(written):
    text = f"# I\n- [A]({written}) — old\n- [B](b.md)\n"
    assert with_index_entry(text, "a.md", "- [A](a.md) — new") == (
        "# I\n- [A](a.md) — new\n- [B](b.md)\n"
    )


def test_upsert_matches_the_link_target_exactly():
    text = "- [X](team/a.md)\n- [Y](ba.md)\n- [Z](a.md.bak)\n- [W](A.md)\n"
    assert with_index_entry(text, "a.md", "- [A](a.md)") == text + "- [A](a.md)\n"


def test_upsert_does_not_touch_prose_that_mentions_the_file():
    text = "See [notes](a.md) first.\n"
    assert with_index_entry(text, "a.md", "- [A](a.md)") == text + "- [A](a.md)\n"


def test_upsert_removes_later_duplicates():
    text = "- [A](a.md) — one\n- [B](b.md)\n- [A again](./a.md) — two\n"
    assert with_index_entry(text, "a.md", "- [A](a.md) — new") == (
        "- [A](a.md) — new\n- [B](b.md)\n"
    )


def test_upsert_refuses_a_line_that_is_not_the_entry():
    with pytest.raises(ValueError, match="single line"):
        with_index_entry("", "a.md", "- [A](a.md)\n")
    with pytest.raises(ValueError, match="does not link"):
        with_index_entry("", "a.md", "- [A](b.md)")
    with pytest.raises(ValueError, match="does not link"):
        with_index_entry("", "a.md", "just text")


def test_remove_index_entry():
    assert without_index_entry(INDEX, "feedback_testing.md") == INDEX.replace(
        "* [Testing](./feedback_testing.md): real DB\n", ""
    )
    assert without_index_entry(INDEX, "absent.md") == INDEX
    assert without_index_entry(INDEX, "prose.md") == INDEX


def test_remove_keeps_the_no_final_newline_convention():
    assert without_index_entry("# I\r\n- [A](a.md)", "a.md") == "# I"
    assert without_index_entry("- [A](a.md)\n", "a.md") == ""
    assert without_index_entry("- [A](a.md)", "a.md") == ""
    assert without_index_entry("- [A](a.md)\n- [A](a.md)\n# end", "a.md") == "# end"


def test_remove_removes_every_duplicate():
    assert without_index_entry("- [A](a.md)\nx\n- [A2](<a.md>)\n", "a.md") == "x\n"


# Lines that may hold anything, links included, except an entry for the file under test.
_ALPHABET = "ab -*1.[]()<>#\\\r\n\té—"
_FILENAME = "a.md"


def _no_entry_for(text: str, filename: str) -> bool:
    return all(entry.path != filename for entry in parse_index_entries(text))


@given(
    st.lists(st.sampled_from([*_ALPHABET, "[x](a.md)", "- [y](b.md)", "\r\n"])).map("".join),
    st.text(max_size=30),
    st.text(max_size=30),
)
def test_upsert_then_remove_gives_back_the_original(text, title, hook):
    assume(_no_entry_for(text, _FILENAME))
    line = format_index_entry(title, _FILENAME, hook)
    updated = with_index_entry(text, _FILENAME, line)
    assert [e.raw for e in parse_index_entries(updated) if e.path == _FILENAME] == [line]
    assert without_index_entry(updated, _FILENAME) == text
    assert without_index_entry(text, _FILENAME) == text


_line_content = st.text(alphabet=_ALPHABET.replace("\n", "")).filter(
    lambda s: _no_entry_for(s, _FILENAME)
)
_ending = st.sampled_from(["\n", "\r\n"])


@given(
    st.lists(st.tuples(_line_content, _ending)),
    st.lists(st.tuples(_line_content, _ending)),
    _ending,
    st.booleans(),
    st.text(max_size=20),
)
def test_upsert_replaces_only_the_entry_line(before, after, ending, final_newline, hook):
    def join(lines):
        return "".join(content + end for content, end in lines)

    old = "- [Old](./a.md) — old hook"
    new = format_index_entry("New", _FILENAME, hook)
    tail = join(after)
    if not final_newline and not after:
        ending = ""
    text = join(before) + old + ending + tail
    # Lines are entry-free one by one; make sure they stay so once joined.
    assume(_no_entry_for(join(before) + tail, _FILENAME))
    assert with_index_entry(text, _FILENAME, new) == join(before) + new + ending + tail


# --- files ------------------------------------------------------------------------------------


def test_add_creates_the_index(tmp_path):
    assert write_index_entry(tmp_path, "a.md", "- [A](a.md) — x") is True
    assert (tmp_path / "MEMORY.md").read_bytes() == "- [A](a.md) — x\n".encode()


def test_add_updates_and_appends(tmp_path):
    index = tmp_path / "MEMORY.md"
    index.write_bytes(b"# Index\r\n- [A](a.md) \xe2\x80\x94 old\r\n")
    assert write_index_entry(str(tmp_path), "a.md", "- [A](a.md) — new") is True
    assert write_index_entry(tmp_path, "b/c.md", "- [C](b/c.md)") is True
    assert index.read_bytes() == "# Index\r\n- [A](a.md) — new\r\n- [C](b/c.md)\r\n".encode()


def test_an_unchanged_index_is_not_rewritten(tmp_path):
    index = tmp_path / "MEMORY.md"
    index.write_text("- [A](a.md) — x\n")
    os.utime(index, ns=(1_000_000_000, 1_000_000_000))
    assert write_index_entry(tmp_path, "a.md", "- [A](a.md) — x") is False
    assert delete_index_entry(tmp_path, "zzz.md") is False
    assert index.stat().st_mtime_ns == 1_000_000_000


def test_bytes_that_are_not_utf8_survive_an_edit(tmp_path):
    index = tmp_path / "MEMORY.md"
    index.write_bytes(b"# caf\xe9 notes\n- [A](a.md)\n")
    assert write_index_entry(tmp_path, "b.md", "- [B](b.md) — é") is True
    assert (
        index.read_bytes() == b"# caf\xe9 notes\n- [A](a.md)\n- [B](b.md) \xe2\x80\x94 \xc3\xa9\n"
    )
    assert delete_index_entry(tmp_path, "a.md") is True
    assert index.read_bytes() == b"# caf\xe9 notes\n- [B](b.md) \xe2\x80\x94 \xc3\xa9\n"


def test_remove_from_a_missing_index_creates_nothing(tmp_path):
    assert delete_index_entry(tmp_path, "a.md") is False
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):
        delete_index_entry(tmp_path, "../a.md")


def test_delete_index_entry(tmp_path):
    (tmp_path / "MEMORY.md").write_text("- [A](a.md)\n- [B](b.md)")
    assert delete_index_entry(tmp_path, "b.md") is True
    assert (tmp_path / "MEMORY.md").read_text() == "- [A](a.md)"
    assert [p.name for p in tmp_path.iterdir()] == ["MEMORY.md"]


def test_read_index(tmp_path):
    assert read_index(tmp_path) == ""
    (tmp_path / "MEMORY.md").write_bytes(b"caf\xe9\n")
    assert read_index(tmp_path) == "caf\ufffd\n"


# --- health -----------------------------------------------------------------------------------


def _topic(directory, relative, name="n", description="d", kind="feedback"):
    path = directory / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"---\nname: {name}\ndescription: {description}\ntype: {kind}\n---\nBody.\n",
        encoding="utf-8",
    )
    return path


def test_health_of_a_directory(tmp_path):
    for relative in ["a.md", "b.md", "c.md", "team/t.md", "logs/2026/03/2026-03-05.md"]:
        _topic(tmp_path, relative)
    long_entry = "- [B](b.md) — " + "x" * 200
    (tmp_path / "MEMORY.md").write_text(
        "# Index\n"
        "- [A](a.md) — fine\n"
        f"{long_entry}\n"
        "- [Gone](gone.md) — deleted file\n"
        "- [Web](https://example.com/x.md) — ignored\n"
        "- [Image](pic.png) — not a memory\n"
        "See [team](team/t.md).\n",
        encoding="utf-8",
    )
    health = index_health(tmp_path, exclude=("logs",))
    assert health.exists and not health.invalid_utf8
    assert [e.path for e in health.entries] == ["a.md", "b.md", "gone.md", None, "pic.png"]
    assert [e.path for e in health.missing_targets] == ["gone.md"]
    assert health.unindexed == ("c.md",)
    assert [e.raw for e in health.long_entries] == [long_entry]
    assert health.long_entries[0].length == 214
    assert health.line_count == 7
    assert health.byte_count == len((tmp_path / "MEMORY.md").read_bytes().strip())
    assert health.line_fraction == 7 / 200
    assert health.byte_fraction == health.byte_count / 25_000
    assert not health.was_truncated
    assert not health.ok


def test_health_without_an_index(tmp_path):
    _topic(tmp_path, "b.md")
    _topic(tmp_path, "a.md")
    health = index_health(tmp_path)
    assert not health.exists
    assert health.unindexed == ("a.md", "b.md")
    assert (health.line_count, health.byte_count, health.line_fraction) == (0, 0, 0.0)
    assert health.entries == health.missing_targets == health.long_entries == ()
    assert not health.ok


def test_health_of_a_clean_directory(tmp_path):
    _topic(tmp_path, "a.md")
    (tmp_path / "MEMORY.md").write_text("- [A](./a.md) — fine\n")
    health = index_health(tmp_path)
    assert health.ok
    assert health.unindexed == ()


def test_health_of_an_empty_directory(tmp_path):
    health = index_health(tmp_path)
    assert health.ok and not health.exists


def test_health_of_an_index_over_the_caps(tmp_path):
    lines = entry_lines(250)
    for i in range(1, 251):
        _topic(tmp_path, f"m{i}.md")
    (tmp_path / "MEMORY.md").write_text("\n".join(lines) + "\n")
    health = index_health(tmp_path)
    assert (health.line_count, health.line_fraction) == (250, 1.25)
    assert health.was_line_truncated and not health.was_byte_truncated
    assert health.was_truncated and not health.ok
    assert health.unindexed == health.missing_targets == ()


def test_health_with_invalid_utf8(tmp_path):
    _topic(tmp_path, "a.md")
    (tmp_path / "MEMORY.md").write_bytes(b"- [A](a.md) \xff\xfe\n")
    health = index_health(tmp_path)
    assert health.invalid_utf8 and not health.ok
    assert health.entries[0].raw == "- [A](a.md) \ufffd\ufffd"
    assert health.unindexed == ()


def test_health_of_a_team_directory_skips_its_own_nested_index(tmp_path):
    _topic(tmp_path, "team/a.md")
    (tmp_path / "team" / "MEMORY.md").write_text("- [A](a.md)\n")
    health = index_health(tmp_path)
    assert health.unindexed == ("team/a.md",)
    assert index_health(tmp_path / "team").ok


# --- merging an index rewritten from an older version -----------------------------------------

A = "- [A](a.md) — first\n"
B = "- [B](b.md) — second\n"
C = "- [C](c.md) — third\n"


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "merged"),
    [
        pytest.param(A + B, A + B, B, B, id="nothing changed since: theirs as it is"),
        pytest.param(A, A + C, A + B, A + C + B, id="an entry added since follows its line"),
        pytest.param(A + B, A + B + C, B + A, B + C + A, id="after the line it follows, moved"),
        pytest.param(A, C + A, "# Top\n" + A, C + "# Top\n" + A, id="added at the top: at the top"),
        pytest.param(A + B, A, A + B + C, A + C, id="an entry removed since goes"),
        pytest.param(
            A + B,
            A,
            A + "- [B](b.md) — reworded\n",
            A + "- [B](b.md) — reworded\n",
            id="an entry removed since but reworded here stays",
        ),
        pytest.param(
            A + B,
            A + "- [B](./b.md) — better\n",
            B + A,
            "- [B](./b.md) — better\n" + A,
            id="an entry reworded since is taken where theirs kept it",
        ),
        pytest.param(
            A,
            "- [A](a.md) — ours\n",
            "- [A](a.md) — theirs\n",
            "- [A](a.md) — theirs\n",
            id="both reworded one entry: theirs wins",
        ),
        pytest.param(A, A + C, C, C, id="added on both sides: once"),
        pytest.param(
            A, A + "# Notes\n" + C, A + B, A + "# Notes\n" + C + B, id="a heading added since"
        ),
        pytest.param(
            A.replace("\n", "\r\n"),
            A + C,
            (A + B).replace("\n", "\r\n"),
            (A + C + B).replace("\n", "\r\n"),
            id="theirs' line endings",
        ),
        pytest.param(A, A + "\n\n", A + B, A + B, id="blank lines are no change"),
        pytest.param("", C, "", C, id="an index started since"),
        pytest.param(
            A,
            A + C,
            "- [B](b.md) — no newline",
            C + "- [B](b.md) — no newline",
            id="following a line theirs dropped: at the top",
        ),
        pytest.param(
            A, C + A, "# Top\n\n" + A, C + "# Top\n\n" + A, id="at the top, above blank lines"
        ),
        pytest.param(A, A + C, A.rstrip("\n"), A + C.rstrip("\n"), id="no final newline stays so"),
    ],
)
def test_merge_index(base, ours, theirs, merged):
    assert merge_index(base, ours, theirs) == merged


index_lines = st.sampled_from([A, B, C, "- [D](d/d.md) — fourth\n", "# Heading\n", "prose\n"])


@given(st.lists(index_lines), st.lists(index_lines), st.lists(index_lines))
def test_a_merge_keeps_every_line_added_since_and_every_line_of_theirs_not_removed(
    base, ours, theirs
):
    merged = merge_index("".join(base), "".join(ours), "".join(theirs)).splitlines(keepends=True)
    for line in set(ours) - set(base):
        assert line in merged
    for line in set(theirs):
        removed_since = line in base and line not in ours
        assert (line in merged) != removed_since
