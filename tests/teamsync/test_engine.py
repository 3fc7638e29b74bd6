"""The git engine with no Django: two members, each with a working clone and a store directory,
sharing one bare remote. Everything runs real git; the shared repository is inspected with
`git log -p --all`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memapp.memdir.store_files import INDEX_FILENAME, checksum, read_store, store_checksums
from tests.teamsync.gitutil import (
    MARKERS,
    Member,
    commit_count,
    git,
    history,
    make_bare,
    memory,
    tip_files,
)

FOLDER = "acme/app"

TEN_LINES = memory("Deploy", "".join(f"line {n}: the original text\n" for n in range(1, 11)))


@pytest.fixture
def remote(tmp_path) -> Path:
    return make_bare(tmp_path / "team.git")


@pytest.fixture
def ana(tmp_path, remote) -> Member:
    return Member(tmp_path, "ana", remote)


@pytest.fixture
def ben(tmp_path, remote) -> Member:
    return Member(tmp_path, "ben", remote)


def _edit_line(text: str, n: int, new: str) -> str:
    return text.replace(f"line {n}: the original text", f"line {n}: {new}")


def _shared(ana: Member, ben: Member, key: str, text: str) -> None:
    """Both members hold `key` with `text`, synced."""
    ana.write(key, text)
    ana.sync()
    ben.sync()
    assert ben.read(key) == text


def _pull_writing(member: Member, writes: dict[str, str] | None = None):
    """The pull half of a sync, with `writes` landing in the store between the merge and the
    apply (the moment a sync is most exposed to a local edit); returns the apply's result."""
    with member.clone.locked():
        member.clone.ensure()
        assert member.clone.fetch() is None
        member.clone.integrate()
        for key, text in (writes or {}).items():
            member.write(key, text)
        return member.clone.apply_incoming(member.spec)


def _assert_index_lines(members, lines: list[str]) -> None:
    for member in members:
        assert sorted(member.read(INDEX_FILENAME).splitlines()) == sorted(lines)


def _assert_no_markers(remote: Path) -> None:
    log = history(remote)
    for marker in MARKERS:
        assert marker not in log


# --- merging ---------------------------------------------------------------------------------


def test_a_memory_written_by_one_member_reaches_the_other(ana, ben, remote):
    ana.write("project_deploy.md", TEN_LINES)
    ana.write(INDEX_FILENAME, "- [Deploy](project_deploy.md) — how we deploy\n")
    ana.sync()
    _, applied = ben.pull()
    assert sorted(applied.written) == [INDEX_FILENAME, "project_deploy.md"]
    assert ben.read("project_deploy.md") == TEN_LINES
    assert tip_files(remote, FOLDER)["project_deploy.md"] == TEN_LINES
    assert git(remote, "log", "-1", "--format=%an", "main", "--", FOLDER).strip() == "ana"


def test_a_file_set_back_to_an_earlier_text_arrives_again(ana, ben):
    """What arrives is read from git's objects, each blob's checksum remembered by its id: a
    text that comes back (a blob seen before) is still written."""
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    edited = _edit_line(TEN_LINES, 3, "changed once")
    for text in (edited, TEN_LINES, edited):
        ana.write("project_deploy.md", text)
        ana.sync()
        _, applied = ben.pull()
        assert applied.written == ["project_deploy.md"]
        assert applied.contents == {"project_deploy.md": text.encode()}
        assert ben.read("project_deploy.md") == text


def test_edits_to_different_lines_of_one_memory_are_merged_on_both_sides(ana, ben, remote):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    ana.write("project_deploy.md", _edit_line(TEN_LINES, 2, "ana changed this"))
    ben.write("project_deploy.md", _edit_line(TEN_LINES, 9, "ben changed this"))
    ana.sync()
    merged, _ = ben.sync()
    ana.sync()

    both = _edit_line(_edit_line(TEN_LINES, 2, "ana changed this"), 9, "ben changed this")
    assert merged.merged and merged.conflicts == []
    assert ana.read("project_deploy.md") == both
    assert ben.read("project_deploy.md") == both
    assert tip_files(remote, FOLDER)["project_deploy.md"] == both
    _assert_no_markers(remote)


def test_edits_to_the_same_line_are_kept_as_a_conflict_and_no_marker_is_ever_pushed(
    ana, ben, remote
):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    theirs = _edit_line(TEN_LINES, 5, "deploy on Tuesdays (ana)")
    ours = _edit_line(TEN_LINES, 5, "deploy on Thursdays (ben)")
    ana.write("project_deploy.md", theirs)
    ben.write("project_deploy.md", ours)
    ana.sync()
    merged, applied = ben.sync()

    [conflict] = merged.conflicts
    assert conflict.path == f"{FOLDER}/project_deploy.md"
    assert conflict.kind == "edit"
    assert (conflict.base, conflict.ours, conflict.theirs) == (TEN_LINES, ours, theirs)
    # Ours stays in ben's store (held until a person decides), theirs in the shared repository.
    assert ben.read("project_deploy.md") == ours
    assert "project_deploy.md" not in applied.written
    assert tip_files(remote, FOLDER)["project_deploy.md"] == theirs
    # ... and both versions are in the shared history, so nothing is lost.
    log = history(remote)
    assert "+line 5: deploy on Thursdays (ben)" in log
    assert "+line 5: deploy on Tuesdays (ana)" in log
    _assert_no_markers(remote)
    # The held file is not committed by ben's next sync, and ana is not disturbed.
    ben.sync()
    ana.sync()
    assert tip_files(remote, FOLDER)["project_deploy.md"] == theirs
    assert ana.read("project_deploy.md") == theirs
    _assert_no_markers(remote)


@pytest.mark.parametrize("deleter", ["first", "second"])
def test_an_edit_against_a_deletion_is_a_conflict_whichever_side_deletes(ana, ben, remote, deleter):
    entry = "- [Deploy](project_deploy.md) — how we deploy\n"
    others = "- [A](project_a.md) — a\n- [B](project_b.md) — b\n"
    for name in ("a", "b"):
        ana.write(f"project_{name}.md", memory(name.upper(), f"{name}\n"))
    ana.write(INDEX_FILENAME, entry + others)
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    edited = _edit_line(TEN_LINES, 3, "edited while the other side deleted it")
    first, second = ana, ben
    deleting, editing = (first, second) if deleter == "first" else (second, first)
    deleting.delete("project_deploy.md")
    deleting.write(INDEX_FILENAME, others)  # its line goes with it, as memhub deletes
    editing.write("project_deploy.md", edited)
    first.sync()
    merged, _ = second.sync()

    [conflict] = merged.conflicts
    assert conflict.kind == "edit_delete"
    assert conflict.base == TEN_LINES
    if deleter == "first":
        assert (conflict.ours, conflict.theirs) == (edited, None)
        assert second.read("project_deploy.md") == edited
    else:
        assert (conflict.ours, conflict.theirs) == (None, edited)
        assert second.read("project_deploy.md") is None  # held: not resurrected behind its back
    # The edit is never lost: the shared repository keeps it until a person decides, and
    # with it its index line (part of what the member wrote).
    shared = tip_files(remote, FOLDER)
    assert shared["project_deploy.md"] == edited
    assert shared[INDEX_FILENAME] == entry + others
    first.sync()
    assert editing.read("project_deploy.md") == edited
    assert editing.read(INDEX_FILENAME) == entry + others
    _assert_no_markers(remote)


def test_deletions_propagate_as_commits(ana, ben, remote):
    _shared(ana, ben, "project_old.md", memory("Old", "Obsolete.\n"))
    ana.delete("project_old.md")
    result = ana.commit()
    assert result.deleted == ["project_old.md"]
    ana.sync()
    _, applied = ben.pull()
    assert applied.deleted == ["project_old.md"]
    assert ben.read("project_old.md") is None
    assert "project_old.md" not in tip_files(remote, FOLDER)
    assert "project_old.md" not in ben.base
    deleted_in = git(remote, "log", "--diff-filter=D", "--format=%an", "main", "--", FOLDER)
    assert deleted_in.split() == ["ana"]


def test_memory_md_keeps_both_sides_entries_and_never_gets_markers(ana, ben, remote):
    index = "# Team memory\n- [Deploy](project_deploy.md) — how we deploy\n"
    ana.write("project_deploy.md", TEN_LINES)
    _shared(ana, ben, INDEX_FILENAME, index)
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ana.write(INDEX_FILENAME, index + "- [A](project_a.md) — ana's note\n")
    ben.write("project_b.md", memory("B", "From ben.\n"))
    ben.write(INDEX_FILENAME, index + "- [B](project_b.md) — ben's note\n")
    ana.sync()
    merged, _ = ben.sync()
    ana.sync()

    assert merged.conflicts == []
    for member in (ana, ben):
        lines = member.read(INDEX_FILENAME).splitlines()
        assert lines[:2] == index.splitlines()
        assert sorted(lines[2:]) == [
            "- [A](project_a.md) — ana's note",
            "- [B](project_b.md) — ben's note",
        ]
        assert member.read("project_a.md") and member.read("project_b.md")
    assert tip_files(remote, FOLDER)[INDEX_FILENAME] == ana.read(INDEX_FILENAME)
    _assert_no_markers(remote)


def test_memory_md_is_merged_line_by_line_a_removal_and_a_rewording_hold(ana, ben, remote):
    for name in ("a", "b", "c"):
        ana.write(f"project_{name}.md", memory(name.upper(), f"{name}\n"))
    index = "- [A](project_a.md) — a\n- [B](project_b.md) — b\n- [C](project_c.md) — c\n"
    _shared(ana, ben, INDEX_FILENAME, index)
    # ana rewords A and removes B; ben adds D right where ana changed: overlapping edits.
    ana.delete("project_b.md")
    ana.write(INDEX_FILENAME, "- [A](project_a.md) — a, reworded by ana\n- [C](project_c.md) — c\n")
    ben.write("project_d.md", memory("D", "d\n"))
    ben.write(INDEX_FILENAME, index.replace("— b\n", "— b\n- [D](project_d.md) — d by ben\n"))
    ana.sync()
    merged, _ = ben.sync()
    ana.sync()
    assert merged.conflicts == []
    expected = (
        "- [A](project_a.md) — a, reworded by ana\n"
        "- [D](project_d.md) — d by ben\n"
        "- [C](project_c.md) — c\n"
    )
    assert ana.read(INDEX_FILENAME) == ben.read(INDEX_FILENAME) == expected
    assert tip_files(remote, FOLDER)[INDEX_FILENAME] == expected
    _assert_no_markers(remote)


TEAM_INDEX = (
    "- [Deploy](project_deploy.md) — how we deploy\n"
    "- [On-call](project_oncall.md) — who carries the pager\n"
    "- [Owners](project_owners.md) — code owners\n"
)


def _team_of_three(ana: Member, index: str) -> None:
    for name in ("deploy", "oncall", "owners"):
        ana.write(f"project_{name}.md", memory(name, f"{name}\n"))
    ana.write(INDEX_FILENAME, index)
    ana.sync()


def test_a_member_s_one_line_index_joins_the_team_s_three_entries(ana, ben, remote):
    """The replay: the team index has three entries; a member who never synced (no base)
    syncs her one-line index; every entry of the team's stays, and hers is added."""
    _team_of_three(ana, TEAM_INDEX)
    ben.write("project_mine.md", memory("Mine", "mine\n"))
    ben.write(INDEX_FILENAME, "- [Mine](project_mine.md) — hers\n")
    merged, _ = ben.sync()
    ana.sync()
    assert merged.conflicts == [] and ben.conflicts == []
    expected = "- [Mine](project_mine.md) — hers\n" + TEAM_INDEX
    assert ana.read(INDEX_FILENAME) == ben.read(INDEX_FILENAME) == expected
    assert tip_files(remote, FOLDER)[INDEX_FILENAME] == expected
    for name in ("deploy", "oncall", "owners", "mine"):
        assert ana.read(f"project_{name}.md") and ben.read(f"project_{name}.md")


def test_a_team_index_with_crlf_line_ends_and_no_final_newline_merges_in_its_own_form(
    ana, ben, remote
):
    crlf = TEAM_INDEX.replace("\n", "\r\n").removesuffix("\r\n")
    _team_of_three(ana, crlf)
    ben.write("project_mine.md", memory("Mine", "mine\n"))
    ben.write(INDEX_FILENAME, "- [Mine](project_mine.md) — hers\n")
    ben.sync()
    ana.sync()
    expected = ("- [Mine](project_mine.md) — hers\r\n" + crlf).encode()
    for member in (ana, ben):
        assert (member.store / INDEX_FILENAME).read_bytes() == expected
    assert (ana.clone.folder_files(FOLDER)[INDEX_FILENAME]) == expected


def test_index_entries_of_files_deleted_on_the_other_side_are_dropped(ana, ben, remote):
    index = "- [Old](project_old.md) — obsolete\n- [Deploy](project_deploy.md) — how we deploy\n"
    ana.write("project_old.md", memory("Old", "Obsolete.\n"))
    ana.write("project_deploy.md", TEN_LINES)
    _shared(ana, ben, INDEX_FILENAME, index)
    # ana deletes a memory and its line; ben adds a line right next to it at the same time.
    ana.delete("project_old.md")
    ana.write(INDEX_FILENAME, "- [Deploy](project_deploy.md) — how we deploy\n")
    ben.write("project_new.md", memory("New", "Fresh.\n"))
    ben.write(
        INDEX_FILENAME,
        "- [Old](project_old.md) — obsolete\n"
        "- [New](project_new.md) — fresh\n"
        "- [Deploy](project_deploy.md) — how we deploy\n",
    )
    ana.sync()
    ben.sync()
    ana.sync()

    for member in (ana, ben):
        text = member.read(INDEX_FILENAME)
        assert "project_old.md" not in text
        assert "- [New](project_new.md) — fresh\n" in text
        assert "- [Deploy](project_deploy.md) — how we deploy\n" in text
        assert len(text.splitlines()) == 2
        assert member.read("project_old.md") is None
    assert "project_old.md" not in tip_files(remote, FOLDER)[INDEX_FILENAME]
    _assert_no_markers(remote)


@pytest.mark.parametrize("name", ["café.md", 'say "hi".md'])
def test_a_file_whose_name_git_quotes_loses_its_entry_and_keeps_its_author(ana, ben, remote, name):
    """git quotes a name that is not ASCII or holds a quote in a listing without `-z`: such a
    file deleted on one side while the other reworded its entry still loses that entry, and
    its deletion is still ana's."""
    others = "- [Deploy](project_deploy.md) — how we deploy\n"
    ana.write(name, memory("Old", "Obsolete.\n"))
    ana.write("project_deploy.md", TEN_LINES)
    _shared(ana, ben, INDEX_FILENAME, f"- [Old](<{name}>) — obsolete\n" + others)
    ana.delete(name)
    ana.write(INDEX_FILENAME, others)
    ana.commit()
    assert ana.clone.unpushed_files() == 2  # the file and the index
    ben.write(INDEX_FILENAME, f"- [Old](<{name}>) — obsolete, reworded by ben\n" + others)
    ana.sync()
    ben.sync()
    ana.sync()

    for member in (ana, ben):
        assert member.read(INDEX_FILENAME) == others
        assert member.read(name) is None
    assert tip_files(remote, FOLDER)[INDEX_FILENAME] == others
    path = f"{FOLDER}/{name}"
    assert ben.clone.last_authors([path, f"{FOLDER}/project_deploy.md"]) == {
        path: "ana",
        f"{FOLDER}/project_deploy.md": "ana",
    }


# --- publishing --------------------------------------------------------------------------------


def test_a_non_fast_forward_push_is_rejected_then_integrated_and_pushed(ana, ben, remote):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ben.write("project_b.md", memory("B", "From ben.\n"))
    ana.commit()
    ben.commit()
    ben.pull()  # ben has fetched ...
    assert ana.push() == (True, None, False)  # ... then ana pushes first

    ok, error, permanent = ben.push()
    assert not ok and not permanent
    assert "rejected" in error or "fetch first" in error

    ben.pull()
    assert ben.push() == (True, None, False)
    assert set(tip_files(remote, FOLDER)) == {"project_deploy.md", "project_a.md", "project_b.md"}
    assert ben.read("project_a.md") == memory("A", "From ana.\n")


def test_a_merge_takes_files_with_any_name_a_git_client_pushed(ana, remote, tmp_path):
    """A teammate's plain git pushes names memhub would never write (a line break, bytes that
    are not UTF-8, a form feed); a merge with ana's unpushed commit keeps them as they are and
    publishes ana's memory (it used to fail at every sync after)."""
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ana.sync()
    other = tmp_path / "plain-git"
    git(tmp_path, "clone", "--quiet", str(remote), str(other))
    names = [b"odd/line\nbreak.md", b"odd/latin-\xe9.md", b"odd/form\x0cfeed.md"]
    for name in names:
        path = os.fsdecode(other / os.fsdecode(name))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(b"pushed by plain git\n")
    git(other, "add", "-A")
    who = ["-c", "user.name=t", "-c", "user.email=t@localhost"]
    git(other, *who, "commit", "--quiet", "-m", "odd")
    git(other, "push", "--quiet", "origin", "HEAD:main")

    ana.write("project_b.md", memory("B", "Also from ana.\n"))
    ana.commit()
    ana.pull()
    assert ana.push() == (True, None, False)
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--name-only", "main"],
        cwd=remote,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    assert set(names) <= set(listed)
    assert f"{FOLDER}/project_b.md".encode() in listed


def test_a_rejection_stays_retryable_when_the_remote_url_happens_to_contain_401(tmp_path):
    remote = make_bare(tmp_path / "teams-401" / "memory-403.git")
    ana, ben = Member(tmp_path, "ana", remote), Member(tmp_path, "ben", remote)
    ana.write("a.md", "a\n")
    ana.sync()
    ben.write("b.md", "b\n")
    ben.commit()
    ana.write("a.md", "a2\n")
    ana.sync()
    ok, error, permanent = ben.push()
    assert not ok
    assert not permanent, error


def test_two_clones_started_before_anything_was_pushed_still_merge(ana, ben, remote, monkeypatch):
    # Both clones start (and commit) against an empty remote: two unrelated root commits
    # (started at different times, or they would be the same commit).
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ben.write("project_b.md", memory("B", "From ben.\n"))
    for member, when in ((ana, "2026-03-01T09:00:00"), (ben, "2026-03-01T09:00:07")):
        monkeypatch.setenv("GIT_AUTHOR_DATE", when)
        monkeypatch.setenv("GIT_COMMITTER_DATE", when)
        member.commit()
    monkeypatch.delenv("GIT_AUTHOR_DATE")
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    assert git(ana.clone.clone_dir, "rev-list", "--max-parents=0", "HEAD") != git(
        ben.clone.clone_dir, "rev-list", "--max-parents=0", "HEAD"
    )
    ana.sync()
    ben.sync()
    ana.sync()
    for member in (ana, ben):
        assert member.read("project_a.md") and member.read("project_b.md")
    assert set(tip_files(remote, FOLDER)) == {"project_a.md", "project_b.md"}


def test_syncing_with_nothing_to_do_adds_no_commits(ana, ben, remote):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    # Concurrent changes: each side has merged the other's work once.
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ben.write("project_b.md", memory("B", "From ben.\n"))
    ana.commit()
    ben.sync()
    ana.sync()
    ben.sync()
    settled = commit_count(remote)
    for _ in range(3):
        ana.sync()
        ben.sync()
    assert commit_count(remote) == settled
    with ana.clone.locked():
        assert ana.clone.unpushed() == 0


def test_a_remote_that_refuses_every_push_is_a_permanent_error(ana, remote):
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes to this repository are disabled' >&2\nexit 1\n")
    hook.chmod(0o755)
    ana.write("a.md", "a\n")
    ana.commit()
    ok, error, permanent = ana.push()
    assert not ok
    assert "pre-receive hook declined" in error
    assert permanent


def test_a_missing_remote_is_a_permanent_error(tmp_path):
    ana = Member(tmp_path, "ana", tmp_path / "nowhere.git")
    ana.write("a.md", "a\n")
    ana.commit()
    ok, error, permanent = ana.push()
    assert not ok and permanent
    assert "nowhere.git" in error


# --- caps in the engine ------------------------------------------------------------------------


def test_new_files_over_the_entry_cap_are_refused_while_existing_ones_still_change(ana, remote):
    ana.write("one.md", "1\n")
    ana.write("two.md", "2\n")
    ana.commit(max_entries=2)
    ana.write("one.md", "1, edited\n")
    ana.write("three.md", "3\n")
    ana.write(INDEX_FILENAME, "- [One](one.md)\n")
    result = ana.commit(max_entries=2)
    assert result.capped == ["three.md"]
    assert sorted(result.committed) == [INDEX_FILENAME, "one.md"]
    assert result.total_entries == 2
    assert "three.md" not in result.base  # still a local change: tried again on the next sync
    files = ana.clone.folder_files(FOLDER)
    assert files["one.md"] == b"1, edited\n" and "three.md" not in files


def test_files_over_the_byte_limit_are_not_committed(ana):
    ana.write("huge.md", "x" * 1001)
    ana.write("small.md", "x" * 1000)
    result = ana.commit(max_entry_bytes=1000)
    assert result.too_large == ["huge.md"]
    assert result.blocked == {"huge.md": []}
    assert result.committed == ["small.md"]
    assert "huge.md" not in ana.clone.folder_files(FOLDER)


# --- crash safety ------------------------------------------------------------------------------


def _check_out(clone: Path) -> None:
    """Turn a clone into one as memhub kept it before: a checked-out work tree."""
    git(clone, "config", "core.bare", "false")
    git(clone, "reset", "--hard", "--quiet")


def _only_git_dir(clone: Path) -> bool:
    return [p.name for p in clone.iterdir()] == [".git"]


def test_a_clone_has_no_work_tree_and_a_pull_checks_nothing_out(ana, ben):
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ana.sync()
    ben.sync()
    assert ben.read("project_a.md") == memory("A", "From ana.\n")
    for member in (ana, ben):
        assert _only_git_dir(member.clone.clone_dir)
        assert git(member.clone.clone_dir, "config", "--bool", "core.bare").strip() == "true"


def test_a_checked_out_clone_left_mid_merge_is_migrated(ana, ben, remote):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    ana.write("project_deploy.md", _edit_line(TEN_LINES, 5, "ana"))
    ana.sync()
    ben.write("project_deploy.md", _edit_line(TEN_LINES, 5, "ben"))
    ben.commit()
    clone = ben.clone.clone_dir
    head = git(clone, "rev-parse", "HEAD").strip()
    _check_out(clone)
    git(clone, "fetch", "--quiet", "origin")
    # What a process killed in the middle of `git merge` left: MERGE_HEAD, markers on disk.
    with pytest.raises(Exception):  # noqa: B017
        git(clone, "merge", "--no-edit", "origin/main")
    assert (clone / ".git" / "MERGE_HEAD").exists()
    assert "<<<<<<<" in (clone / FOLDER / "project_deploy.md").read_text()

    with ben.clone.locked():
        ben.clone.ensure()
    assert not (clone / ".git" / "MERGE_HEAD").exists()
    assert _only_git_dir(clone)
    assert git(clone, "rev-parse", "HEAD").strip() == head
    # ... and the next sync goes the normal way: a conflict, no markers anywhere.
    merged, _ = ben.sync()
    assert [c.kind for c in merged.conflicts] == ["edit"]
    _assert_no_markers(remote)


def test_a_checked_out_clone_with_a_dirty_work_tree_is_migrated_and_loses_nothing(ana, remote):
    ana.write("project_a.md", memory("A", "Committed.\n"))
    ana.commit()
    clone = ana.clone.clone_dir
    _check_out(clone)
    (clone / FOLDER / "project_a.md").write_text("half-written junk")
    (clone / FOLDER / "stray.md").write_text("never committed")
    git(clone, "add", "--", f"{FOLDER}/stray.md")
    with ana.clone.locked():
        ana.clone.ensure()
    assert _only_git_dir(clone)
    assert git(clone, "show", f"HEAD:{FOLDER}/project_a.md") == memory("A", "Committed.\n")
    assert ana.read("project_a.md") == memory("A", "Committed.\n")
    ana.write("project_b.md", memory("B", "After.\n"))
    ana.sync()
    shared = tip_files(remote, FOLDER)
    assert shared == {
        "project_a.md": memory("A", "Committed.\n"),
        "project_b.md": memory("B", "After.\n"),
    }


def test_ensure_removes_a_git_lock_file_left_by_a_killed_git(ana, remote):
    ana.write("project_a.md", memory("A", "One.\n"))
    ana.commit()
    # SIGKILL during a commit leaves the branch's lock behind.
    (ana.clone.clone_dir / ".git" / "refs" / "heads" / "main.lock").write_text("")
    ana.write("project_a.md", memory("A", "Two.\n"))
    ana.sync()
    assert tip_files(remote, FOLDER)["project_a.md"] == memory("A", "Two.\n")


def test_a_killed_commit_is_redone_by_the_next_one(ana, remote):
    ana.write("project_a.md", memory("A", "One.\n"))
    stale_base = dict(ana.base)
    ana.commit()
    # The process died after `git commit` but before its caller saved the new base.
    ana.base = stale_base
    result = ana.commit()
    assert result.committed == ["project_a.md"] and result.commit is None
    assert result.base["project_a.md"] == checksum(memory("A", "One.\n").encode())
    ana.sync()
    assert tip_files(remote, FOLDER) == {"project_a.md": memory("A", "One.\n")}


def test_apply_never_overwrites_a_store_file_changed_since_the_base(ana, ben, remote):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    ana.write("project_deploy.md", _edit_line(TEN_LINES, 1, "from ana"))
    ana.sync()
    local = _edit_line(TEN_LINES, 10, "ben is typing this right now")
    ben.write("project_deploy.md", local)  # changed after ben's last commit: not in the base
    ben.write("project_new.md", "new on ben's side\n")
    applied = _pull_writing(ben)
    assert applied.not_applied == ["project_deploy.md"]
    assert applied.written == []
    assert applied.base["project_deploy.md"] == ben.base["project_deploy.md"]
    assert ben.read("project_deploy.md") == local
    assert ben.read("project_new.md") == "new on ben's side\n"
    # The next sync commits ben's change and lets git merge the two.
    ben.base = applied.base
    ben.sync()
    merged = _edit_line(_edit_line(TEN_LINES, 1, "from ana"), 10, "ben is typing this right now")
    assert ben.read("project_deploy.md") == merged
    assert tip_files(remote, FOLDER)["project_deploy.md"] == merged


def test_an_overlapping_local_edit_made_during_a_sync_becomes_a_conflict(ana, ben, remote):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    theirs = _edit_line(TEN_LINES, 6, "ana's wording")
    ours = _edit_line(TEN_LINES, 6, "ben's wording, typed while the sync ran")
    ana.write("project_deploy.md", theirs)
    ana.sync()
    applied = _pull_writing(ben, {"project_deploy.md": ours})
    ben.base = applied.base
    result = ben.commit()
    [conflict] = result.conflicts
    assert (conflict.kind, conflict.base, conflict.ours, conflict.theirs) == (
        "edit",
        TEN_LINES,
        ours,
        theirs,
    )
    assert result.committed == []
    assert ben.read("project_deploy.md") == ours
    assert ben.clone.folder_files(FOLDER)["project_deploy.md"] == theirs.encode()
    ben.held.add("project_deploy.md")
    ben.sync()
    assert tip_files(remote, FOLDER)["project_deploy.md"] == theirs
    _assert_no_markers(remote)


def test_a_local_deletion_of_a_file_a_teammate_edited_during_a_sync_keeps_its_line(
    ana, ben, remote
):
    """Deleted here (with its line) after the sync merged a teammate's edit of it: the commit
    finds the conflict, the shared repository keeps the edit, and its line with it."""
    entry = "- [Deploy](project_deploy.md) — how we deploy\n"
    others = "- [A](project_a.md) — a\n"
    ana.write("project_a.md", memory("A", "a\n"))
    ana.write(INDEX_FILENAME, entry + others)
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    ana.write("project_deploy.md", _edit_line(TEN_LINES, 2, "ana's edit"))
    ana.sync()
    ben.delete("project_deploy.md")
    applied = _pull_writing(ben, {INDEX_FILENAME: others})
    ben.base = applied.base
    result = ben.commit()
    [conflict] = result.conflicts
    assert (conflict.kind, conflict.ours) == ("edit_delete", None)
    ben.held.add("project_deploy.md")
    ben.sync()
    shared = tip_files(remote, FOLDER)
    assert shared["project_deploy.md"] == _edit_line(TEN_LINES, 2, "ana's edit")
    assert shared[INDEX_FILENAME] == entry + others


def test_a_local_index_change_made_during_a_sync_is_merged(ana, ben, remote):
    index = "- [Deploy](project_deploy.md) — how we deploy\n"
    ana.write("project_deploy.md", TEN_LINES)
    _shared(ana, ben, INDEX_FILENAME, index)
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ana.write(INDEX_FILENAME, index + "- [A](project_a.md) — ana's note\n")
    ana.sync()
    applied = _pull_writing(
        ben,
        {
            "project_b.md": memory("B", "From ben.\n"),
            INDEX_FILENAME: index + "- [B](project_b.md) — ben's note\n",
        },
    )
    # Ben's only change to the index is the entry of a file not shared yet: ana's index is
    # applied, with that entry kept.
    assert INDEX_FILENAME in applied.written
    assert ben.read(INDEX_FILENAME).endswith("- [B](project_b.md) — ben's note\n")
    assert "- [A](project_a.md) — ana's note" in ben.read(INDEX_FILENAME)
    ben.base = applied.base
    assert ben.commit().conflicts == []
    ben.sync()
    ana.sync()
    _assert_index_lines(
        (ana, ben),
        [
            "- [Deploy](project_deploy.md) — how we deploy",
            "- [A](project_a.md) — ana's note",
            "- [B](project_b.md) — ben's note",
        ],
    )
    _assert_no_markers(remote)


def test_a_local_entry_for_a_shared_file_made_during_a_sync_is_merged(ana, ben, remote):
    index = "- [Deploy](project_deploy.md) — how we deploy\n"
    ana.write("project_deploy.md", TEN_LINES)
    ana.write("project_c.md", memory("C", "Shared without an entry.\n"))
    _shared(ana, ben, INDEX_FILENAME, index)
    ana.write(INDEX_FILENAME, index + "- [Deploy again](project_deploy.md) — ana's line\n")
    ana.sync()
    applied = _pull_writing(ben, {INDEX_FILENAME: index + "- [C](project_c.md) — ben's line\n"})
    assert INDEX_FILENAME in applied.not_applied  # ben's own change: merged by the commit
    ben.base = applied.base
    assert ben.commit().conflicts == []
    ben.sync()
    ana.sync()
    _assert_index_lines(
        (ana, ben),
        [
            "- [Deploy](project_deploy.md) — how we deploy",
            "- [Deploy again](project_deploy.md) — ana's line",
            "- [C](project_c.md) — ben's line",
        ],
    )
    _assert_no_markers(remote)


def test_an_index_entry_of_a_file_kept_back_is_not_shared_and_stays_in_the_store(ana, ben, remote):
    index = "- [Deploy](project_deploy.md) — how we deploy\n"
    ana.write("project_deploy.md", TEN_LINES)
    _shared(ana, ben, INDEX_FILENAME, index)
    dump = "- [Dump](reference_dump.md) — the whole incident log\n"
    ana.write("reference_dump.md", memory("Dump", "x" * 260_000 + "\n"))  # over the limit
    ana.write(INDEX_FILENAME, index + dump)
    assert "reference_dump.md" in ana.commit().blocked
    ana.sync()
    ben.sync()
    assert ben.read(INDEX_FILENAME) == index  # no entry teammates could not open
    assert ana.read(INDEX_FILENAME) == index + dump  # nothing of ana's is lost
    ben.write(INDEX_FILENAME, index + "- [Ben](project_ben.md) — ben's\n")
    ben.write("project_ben.md", memory("Ben", "From ben.\n"))
    ben.sync()
    ana.sync()
    assert ana.read(INDEX_FILENAME) == index + "- [Ben](project_ben.md) — ben's\n" + dump
    ana.write("reference_dump.md", memory("Dump", "The log lives in the wiki.\n"))  # fixed
    ana.sync()
    ben.sync()
    assert ben.read("reference_dump.md") == ana.read("reference_dump.md")
    assert dump.strip() in ben.read(INDEX_FILENAME).splitlines()
    assert "x" * 1000 not in history(remote)


def test_an_entry_of_a_shared_file_kept_back_after_a_teammate_deleted_it_is_not_shared(
    ana, ben, remote
):
    index = "- [Deploy](project_deploy.md) — how we deploy\n"
    kept = "- [Dump](reference_dump.md) — the incident log\n"
    ana.write("project_deploy.md", TEN_LINES)
    ana.write("reference_dump.md", memory("Dump", "Short for now.\n"))
    _shared(ana, ben, INDEX_FILENAME, index + kept)
    ben.delete("reference_dump.md")
    ben.write(INDEX_FILENAME, index)
    ben.sync()
    ana.write("reference_dump.md", memory("Dump", "x" * 260_000 + "\n"))  # over the limit
    ana.sync()
    ana.write(INDEX_FILENAME, index + kept)  # put back, say by rebuilding the index
    ana.sync()
    ben.sync()
    assert ben.read(INDEX_FILENAME) == index and ben.read("reference_dump.md") is None
    assert ana.read(INDEX_FILENAME) == index + kept
    assert "x" * 1000 not in history(remote)


def test_a_teammate_deleting_the_index_leaves_the_entries_of_files_kept_back(ana, ben):
    index = "- [Deploy](project_deploy.md) — how we deploy\n"
    kept = "- [Dump](reference_dump.md) — the incident log\n"
    ana.write("project_deploy.md", TEN_LINES)
    _shared(ana, ben, INDEX_FILENAME, index)
    ana.write("reference_dump.md", memory("Dump", "x" * 260_000 + "\n"))  # over the limit
    ana.write(INDEX_FILENAME, index + kept)
    ana.sync()
    ben.delete(INDEX_FILENAME)
    ben.sync()
    ana.sync()
    assert ana.read(INDEX_FILENAME) == kept  # ben's deletion, without losing ana's own entry
    ana.sync()
    ben.sync()
    assert ben.read(INDEX_FILENAME) is None  # and nothing comes back to ben


def test_apply_never_deletes_a_store_file_changed_since_the_base(ana, ben):
    _shared(ana, ben, "project_deploy.md", TEN_LINES)
    ana.delete("project_deploy.md")
    ana.sync()
    ben.write("project_deploy.md", _edit_line(TEN_LINES, 4, "still needed"))
    applied = _pull_writing(ben)
    assert applied.not_applied == ["project_deploy.md"] and applied.deleted == []
    assert ben.read("project_deploy.md") == _edit_line(TEN_LINES, 4, "still needed")


def test_read_store_skips_hidden_and_excluded_entries_and_symlinks(tmp_path):
    store = tmp_path / "store"
    (store / "sub").mkdir(parents=True)
    (store / "a.md").write_text("a")
    (store / "sub" / "b.md").write_text("b")
    (store / ".a.md.x1.tmp").write_text("temp")
    (store / "notes.txt").write_text("not memory")
    (store / "team").mkdir()
    (store / "team" / "t.md").write_text("excluded")
    (store / "link.md").symlink_to(store / "a.md")
    assert read_store(store, ("team",)) == {"a.md": b"a", "sub/b.md": b"b"}
    assert read_store(tmp_path / "missing") == {}


def test_read_store_skips_a_fifo_instead_of_hanging_on_it(tmp_path):
    (tmp_path / "a.md").write_text("a")
    os.mkfifo(tmp_path / "pipe.md")  # reading it would block for ever
    assert read_store(tmp_path) == {"a.md": b"a"}


def test_store_checksums_are_those_of_read_store_and_follow_every_change(tmp_path, monkeypatch):
    store = tmp_path / "store"
    (store / "sub").mkdir(parents=True)
    (store / "a.md").write_text("alpha")
    (store / "sub" / "b.md").write_text("beta")
    (store / "team").mkdir()
    (store / "team" / "t.md").write_text("excluded")

    def expected():
        return {key: checksum(data) for key, data in read_store(store, ("team",)).items()}

    assert store_checksums(store, ("team",)) == expected() and len(expected()) == 2
    (store / "a.md").write_text("ALPHA")  # in place, same size, within the same clock tick
    assert store_checksums(store, ("team",)) == expected()
    monkeypatch.setattr(
        "memapp.memdir.store_files.SETTLED_NS", 0
    )  # every file counts as settled: remembered
    assert store_checksums(store, ("team",)) == expected()
    replacement = store / "new.tmp"
    replacement.write_text("gamma")
    replacement.replace(store / "sub" / "b.md")  # an atomic write: a new inode
    (store / "a.md").unlink()
    (store / "c.md").write_text("c")
    assert store_checksums(store, ("team",)) == expected()
    assert set(expected()) == {"c.md", "sub/b.md"}


def test_last_authors_since_a_commit_still_finds_files_changed_before_it(ana, ben):
    ana.write("project_a.md", memory("A", "From ana.\n"))
    ana.sync()
    ben.sync()
    since = ben.clone.head()
    ben.write("project_b.md", memory("B", "From ben.\n"))
    ben.commit()
    paths = [f"{FOLDER}/project_a.md", f"{FOLDER}/project_b.md"]
    expected = dict(zip(paths, ["ana", "ben"], strict=True))
    assert ben.clone.last_authors(paths, since=since) == expected
    assert ben.clone.last_authors(paths) == expected
