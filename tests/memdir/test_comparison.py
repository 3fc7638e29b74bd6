"""Comparing two versions of a file (memapp/memdir/comparison.py): the side-by-side rows a
snapshot or proposal review draws, and the one-column diff of a memory's history."""

from __future__ import annotations

from memapp.memdir.comparison import line_diff, side_by_side


def test_side_by_side_folds_long_unchanged_runs():
    old = "".join(f"line {i}\n" for i in range(1, 21))
    new = old.replace("line 10\n", "line ten\n")
    rows = side_by_side(old, new, context=2)
    kinds = [r.kind for r in rows]
    assert kinds == ["skip", "equal", "equal", "replace", "equal", "equal", "skip"]
    assert rows[0].count == 7 and rows[-1].count == 8
    assert (rows[3].left_no, rows[3].left, rows[3].right_no, rows[3].right) == (
        10,
        "line 10",
        10,
        "line ten",
    )
    assert [r.kind for r in side_by_side("a\n", "a\nb\nc\n")] == ["equal", "insert", "insert"]
    assert [r.kind for r in side_by_side("a\nb\n", "b\n")] == ["delete", "equal"]


def test_a_changed_line_names_only_the_changed_words():
    diff = line_diff("Ship on Tuesdays.\n", "Ship on Thursdays.\n")
    old, new = diff.rows
    assert (old.kind, old.old, new.kind, new.new) == ("del", 1, "add", 1)
    assert ["".join(old.words[a:b]) for a, b in old.changed] == ["Tuesdays"]
    assert ["".join(new.words[a:b]) for a, b in new.changed] == ["Thursdays"]
