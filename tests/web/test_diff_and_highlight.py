"""The diff rows and search highlights the pages draw: escaped text, changes marked."""

from __future__ import annotations

from memapp.web.diff import diff_lines
from memapp.web.highlight import highlight, snippet


def kinds(diff) -> list[tuple[str, int | None, int | None]]:
    return [(row.kind, row.old, row.new) for row in diff.rows]


def test_identical_texts_have_no_rows():
    assert diff_lines("a\nb\n", "a\nb\n").same


def test_a_changed_line_marks_only_the_changed_words():
    diff = diff_lines("Ship on Tuesdays.\n", "Ship on Thursdays.\n")
    assert (diff.added, diff.removed) == (1, 1)
    assert [str(row.html) for row in diff.rows] == [
        "Ship on <mark>Tuesdays</mark>.",
        "Ship on <mark>Thursdays</mark>.",
    ]


def test_long_unchanged_stretches_fold_into_gaps():
    old = "".join(f"line {i}\n" for i in range(1, 21))
    new = old.replace("line 10\n", "line ten\n")
    rows = kinds(diff_lines(old, new))
    assert rows[0] == ("gap", None, None) and rows[-1] == ("gap", None, None)
    assert ("del", 10, None) in rows and ("add", None, 10) in rows
    assert len(rows) == 2 + 3 + 2 + 3  # gaps, 3 lines of context on each side, the change


def test_a_new_file_and_a_deleted_one():
    assert kinds(diff_lines(None, "a\nb\n")) == [("add", None, 1), ("add", None, 2)]
    assert kinds(diff_lines("a\n", None)) == [("del", 1, None)]


def test_text_is_escaped_in_diffs_and_highlights():
    diff = diff_lines("<b>x</b>\n", "<script>alert(1)</script>\n")
    assert "<script>" not in "".join(str(row.html) for row in diff.rows)
    assert (
        str(highlight("flaky", "<i>flaky</i>"))
        == '&lt;i&gt;<mark class="hit">flaky</mark>&lt;/i&gt;'
    )


def test_a_snippet_is_cut_around_the_first_match():
    body = "Intro words. " * 30 + "The runner's disk fills up. " + "Outro words. " * 30
    marked = str(snippet("disk", body))
    assert marked.startswith("… ") and marked.endswith(" …")
    assert '<mark class="hit">disk</mark> fills up.' in marked
    assert len(marked) < 260
    assert str(snippet("kubernetes", body)) == ""
