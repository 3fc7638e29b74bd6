"""Planning a MEMORY.md (docs/design.md §5, §14.7): the planned index is always consistent with
the files and within its caps, and what a person must tick is named."""

from __future__ import annotations

import datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from memapp.memdir.index import format_index_entry, parse_index_entries
from memapp.memdir.index_plan import TopicFile, fit_index, index_checks, plan_index, store_risks

DAY = datetime.date(2026, 3, 5)


def topic(key: str, description: str = "", age_days: int = 0, title: str = "") -> TopicFile:
    day = DAY - datetime.timedelta(days=age_days)
    moment = datetime.datetime.combine(day, datetime.time(12), tzinfo=datetime.UTC)
    return TopicFile(
        key,
        title or key.removesuffix(".md"),
        description or f"About {key}",
        int(moment.timestamp() * 1000),
        day,
    )


def entries_of(text: str) -> list[str | None]:
    return [entry.path for entry in parse_index_entries(text)]


def measure(text: str) -> tuple[int, int]:
    stripped = text.strip()
    return stripped.count("\n") + 1 if stripped else 0, len(stripped.encode())


def test_the_plan_repairs_the_index_and_keeps_what_is_not_an_entry():
    files = {k: topic(k) for k in ["a.md", "b.md", "c.md", "new.md"]}
    files["new.md"] = topic("new.md", "Newest thing", age_days=0)
    index = (
        "# Memory\n\n- [A](a.md) — about a\n- [Gone](gone.md) — deleted long ago\n"
        "- [A again](./a.md) — twice\n\n\n- [Docs](https://example.com/docs) — elsewhere\n"
        f"- [B](b.md) — {'very long hook ' * 20}\n- [C](c.md) — freeze next Tuesday\n"
    )
    plan = plan_index(index, files)
    assert entries_of(plan.text) == ["a.md", None, "b.md", "c.md", "new.md"]
    assert plan.text.startswith("# Memory\n\n- [A](a.md) — about a\n")
    assert "https://example.com/docs" in plan.text
    assert plan.dangling == ["gone.md"] and plan.duplicates == ["a.md"]
    assert plan.shortened == ["b.md"] and plan.added == ["new.md"]
    assert plan.dated == ["c.md"] and "Tuesday 2026-03-10" in plan.text
    assert all(len(line) <= 200 for line in plan.text.splitlines())
    assert "\n\n\n" not in plan.text
    assert "removes the entries of missing files (gone.md)" in plan.reason()


def test_a_file_no_index_line_can_name_is_never_given_one():
    files = {k: topic(k) for k in ["a.md", "notes_#1.md"]}
    plan = plan_index("- [A](a.md) — about a\n", files)
    assert plan.text == "- [A](a.md) — about a\n" and plan.added == []
    fitted = fit_index("- [A](a.md) — a\n", {"a.md", "x_#2.md"}, {"x_#2.md": ("X", "new")})
    assert fitted == "- [A](a.md) — a\n"


def test_an_index_over_both_caps_keeps_the_newest_entries_within_them():
    files = {f"m{i:03}.md": topic(f"m{i:03}.md", "x" * 120, age_days=i) for i in range(300)}
    index = "".join(
        format_index_entry(f"Memory {i}", f"m{i:03}.md", "y" * 180) + "\n" for i in range(300)
    )
    assert measure(index)[0] > 200 and measure(index)[1] > 25_000
    plan = plan_index(index, files)
    lines, size = measure(plan.text)
    assert lines <= 200 and size <= 25_000
    kept = set(entries_of(plan.text))
    assert kept == {f"m{i:03}.md" for i in range(len(kept))}  # the newest ones
    assert len(plan.left_out) == 300 - len(kept)


def test_a_planned_index_names_only_files_that_exist_and_fits_any_caps():
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.sampled_from(["a.md", "b.md", "c.md", "gone.md", "d/e.md"]), max_size=20),
        st.lists(st.sampled_from(["a.md", "b.md", "c.md", "d/e.md", "f.md"]), unique=True),
        st.integers(1, 8),
        st.integers(40, 600),
        st.sampled_from(["", "# Head", "prose line", "- not an entry"]),
    )
    def check(linked, existing, max_lines, max_bytes, other):
        files = {key: topic(key, "hook " * 10, age_days=i) for i, key in enumerate(existing)}
        index = "\n".join([other] + [format_index_entry(k, k, "why " * 8) for k in linked]) + "\n"
        plan = plan_index(index, files, caps=(max_lines, max_bytes))
        lines, size = measure(plan.text)
        assert lines <= max_lines and size <= max_bytes or plan.text == ""
        paths = entries_of(plan.text)
        assert set(paths) <= set(files) and len(paths) == len(set(paths))

    check()


def test_fitting_an_approved_index_drops_entries_of_files_that_will_not_exist():
    text = "# Mine\n- [A](a.md) — a\n- [B](b.md) — b\n"
    fitted = fit_index(text, {"a.md", "c.md"}, {"c.md": ("C", "a new one")})
    assert fitted == "# Mine\n- [A](a.md) — a\n- [C](c.md) — a new one\n"


def test_index_checks_name_what_a_person_must_see():
    keys = {"a.md"}
    over = "".join(f"- [A{i}](a.md) — x\n" for i in range(5))
    codes = {c["code"]: c["level"] for c in index_checks(over, keys, (3, 25_000), True)}
    assert codes == {"cap": "bad"}
    assert index_checks("# nothing here\n", keys, (200, 25_000), True)[0]["code"] == "empty_index"
    assert index_checks("", keys, (200, 25_000), False) == []
    dangling = index_checks("- [B](b.md) — b\n", keys, (200, 25_000), True)
    assert [c["code"] for c in dangling] == ["dangling"]


def test_risky_proposals_need_a_tick():
    assert store_risks(8, 2, False) == []
    assert [r.code for r in store_risks(8, 3, True)] == ["deletes_quarter", "empties_index"]
