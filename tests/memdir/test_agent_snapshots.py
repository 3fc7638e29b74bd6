"""Agent memory snapshots (docs/design.md §13): the decision rule, the review, each action's
exact effect on disk, malformed snapshots and hostile file names."""

from __future__ import annotations

import datetime
import json
import os
import secrets
import string
from pathlib import Path

import pytest

from memapp.memdir.agent_snapshots import (
    MARKER_FILENAME,
    SnapshotChanged,
    SnapshotError,
    SnapshotSecretError,
    compare_snapshot,
    format_iso,
    initialize_from_snapshot,
    keep_local,
    merge_from_snapshot,
    parse_iso_date,
    publish_snapshot,
    read_marker,
    replace_from_snapshot,
    snapshot_dir,
    snapshot_status,
)

T1 = "2026-03-01T10:00:00.000Z"
T2 = "2026-03-05T09:30:00.000Z"


def topic(name: str, description: str, type_: str = "feedback", body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n{body}"


def fake_github_token() -> str:
    alphabet = string.ascii_letters + string.digits
    return "ghp_" + "".join(secrets.choice(alphabet) for _ in range(36))


def make_snapshot(path: Path, updated_at: str | None = T2, **files: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    if updated_at is not None:
        (path / "snapshot.json").write_text(json.dumps({"updatedAt": updated_at}))
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


def mark(memory: Path, synced_from: str) -> None:
    memory.mkdir(parents=True, exist_ok=True)
    (memory / MARKER_FILENAME).write_text(json.dumps({"syncedFrom": synced_from}))


def tree(root: Path) -> dict[str, str]:
    """Every file under root (symlinks shown as such), by relative path."""
    found = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[rel] = path.read_text(encoding="utf-8", errors="replace")
    return found


@pytest.fixture
def snap(tmp_path) -> Path:
    return tmp_path / "repo" / ".claude" / "agent-memory-snapshots" / "reviewer"


@pytest.fixture
def local(tmp_path) -> Path:
    return tmp_path / "home" / ".claude" / "agent-memory" / "reviewer"


# --- paths and dates ----------------------------------------------------------------------------


def test_the_snapshot_dir_is_under_the_repo_with_colons_made_dashes(tmp_path):
    assert snapshot_dir(tmp_path, "plugin:reviewer") == (
        tmp_path / ".claude" / "agent-memory-snapshots" / "plugin-reviewer"
    )
    with pytest.raises(ValueError):
        snapshot_dir(tmp_path, "../evil")


def test_dates_are_iso_and_without_an_offset_utc():
    assert parse_iso_date("2026-03-05") == datetime.datetime(2026, 3, 5, tzinfo=datetime.UTC)
    assert parse_iso_date("2026-03-05T10:00:00+02:00") == datetime.datetime(
        2026, 3, 5, 8, tzinfo=datetime.UTC
    )
    assert parse_iso_date(T2) == datetime.datetime(2026, 3, 5, 9, 30, tzinfo=datetime.UTC)
    for bad in ["", "yesterday", "2026-02-30", "03/05/2026", "  "]:
        assert parse_iso_date(bad) is None
    moment = datetime.datetime(2026, 3, 28, 10, 30, 0, 123456, tzinfo=datetime.UTC)
    assert format_iso(moment) == "2026-03-28T10:30:00.123Z"


# --- the decision rule --------------------------------------------------------------------------


def test_no_snapshot_dir_means_none(snap, local):
    status = snapshot_status(snap, local)
    assert (status.action, status.reason) == ("none", "no snapshot.json")
    assert not status.pending


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "snapshot.json is not valid JSON"),
        ("[1, 2]", "snapshot.json is not a JSON object"),
        ("{}", "snapshot.json has no updatedAt"),
        ('{"updatedAt": ""}', "updatedAt in snapshot.json is empty"),
        ('{"updatedAt": 20260305}', "updatedAt in snapshot.json is not text"),
        ('{"updatedAt": null}', "updatedAt in snapshot.json is not text"),
        ('{"updatedAt": "last tuesday"}', "updatedAt in snapshot.json is not a date"),
        ('{"updatedAt": "2026-13-01"}', "updatedAt in snapshot.json is not a date"),
        (b"\xff\xfe{}", "snapshot.json is not valid JSON"),
    ],
)
def test_an_invalid_snapshot_json_means_none_with_the_reason(snap, local, content, reason):
    make_snapshot(snap, None, **{"a.md": topic("A", "a")})
    data = content if isinstance(content, bytes) else content.encode()
    (snap / "snapshot.json").write_bytes(data)
    status = snapshot_status(snap, local)  # no local memory: would be "initialize" if valid
    assert status.action == "none"
    assert status.reason.startswith(reason)


def test_a_snapshot_json_that_is_a_directory_or_a_symlink_is_invalid(snap, local, tmp_path):
    make_snapshot(snap, None)
    (snap / "snapshot.json").mkdir()
    assert snapshot_status(snap, local).action == "none"
    (snap / "snapshot.json").rmdir()
    real = tmp_path / "elsewhere.json"
    real.write_text(json.dumps({"updatedAt": T2}))
    (snap / "snapshot.json").symlink_to(real)
    assert snapshot_status(snap, local).action == "none"


def test_no_local_dir_means_initialize(snap, local):
    make_snapshot(snap, **{"a.md": topic("A", "a")})
    status = snapshot_status(snap, local)
    assert (status.action, status.updated_at) == ("initialize", T2)


def test_a_local_dir_without_top_level_md_means_initialize(snap, local, tmp_path):
    make_snapshot(snap)
    (local / "sub").mkdir(parents=True)
    (local / "sub" / "deep.md").write_text(topic("Deep", "nested"))
    (local / "notes.txt").write_text("not memory")
    (local / "dir.md").mkdir()  # a directory named like a memory
    outside = tmp_path / "outside.md"
    outside.write_text(topic("Out", "outside"))
    (local / "link.md").symlink_to(outside)  # a symlink is not a local memory file
    mark(local, T2)  # even an up-to-date marker does not matter without memory
    assert snapshot_status(snap, local).action == "initialize"


def test_local_memory_without_a_marker_means_update_available(snap, local):
    make_snapshot(snap)
    local.mkdir(parents=True)
    (local / "a.md").write_text(topic("A", "a"))
    status = snapshot_status(snap, local)
    assert (status.action, status.reason) == ("update_available", "never synced from a snapshot")


@pytest.mark.parametrize(
    "marker",
    [
        "{oops",
        "[]",
        "{}",
        '{"syncedFrom": ""}',
        '{"syncedFrom": 5}',
        '{"syncedFrom": "not a date"}',
    ],
)
def test_an_invalid_marker_means_update_available(snap, local, marker):
    make_snapshot(snap)
    local.mkdir(parents=True)
    (local / "a.md").write_text(topic("A", "a"))
    (local / MARKER_FILENAME).write_text(marker)
    status = snapshot_status(snap, local)
    assert status.action == "update_available"
    assert status.reason.startswith("the sync marker is invalid")
    assert not read_marker(local).valid


def test_a_newer_snapshot_means_update_available(snap, local):
    make_snapshot(snap, T2)
    local.mkdir(parents=True)
    (local / "a.md").write_text(topic("A", "a"))
    mark(local, T1)
    status = snapshot_status(snap, local)
    assert (status.action, status.updated_at, status.synced_from) == ("update_available", T2, T1)


@pytest.mark.parametrize(
    ("updated_at", "synced_from"),
    [
        (T2, T2),  # the same snapshot
        (T1, T2),  # an older snapshot (a branch switch) is not offered
        ("2026-03-05T11:30:00+02:00", T2),  # the same instant, written another way
        ("2026-03-05", "2026-03-05T00:00:00Z"),
    ],
)
def test_a_snapshot_not_newer_than_the_marker_means_none(snap, local, updated_at, synced_from):
    make_snapshot(snap, updated_at)
    local.mkdir(parents=True)
    (local / "a.md").write_text(topic("A", "a"))
    mark(local, synced_from)
    status = snapshot_status(snap, local)
    assert status.action == "none"
    assert status.reason == f"in sync with {synced_from}"


# --- review -------------------------------------------------------------------------------------


def test_the_review_sorts_files_into_added_removed_changed_and_unchanged(snap, local):
    make_snapshot(
        snap,
        **{
            "MEMORY.md": "- [A](a.md) — a\n- [B](b.md) — b\n",
            "a.md": topic("A", "same"),
            "b.md": topic("B", "new wording", "project", "Line 1\nLine 2 changed\nLine 3\n"),
            "c.md": topic("C", "only in the snapshot"),
        },
    )
    local.mkdir(parents=True)
    (local / "MEMORY.md").write_text("- [A](a.md) — a\n- [B](b.md) — b\n")
    (local / "a.md").write_text(topic("A", "same"))
    (local / "b.md").write_text(topic("B", "old wording", "feedback", "Line 1\nLine 2\nLine 3\n"))
    (local / "mine.md").write_text(topic("Mine", "only local"))
    (local / "notes.txt").write_text("local notes")
    (local / MARKER_FILENAME).write_text(json.dumps({"syncedFrom": T1}))

    review = compare_snapshot(snap, local)

    changes = {f.name: f.change for f in review.files}
    assert changes == {
        "MEMORY.md": "unchanged",
        "a.md": "unchanged",
        "b.md": "changed",
        "c.md": "added",
        "mine.md": "removed",
        "notes.txt": "removed",
    }
    assert [f.name for f in review.files][0] == "MEMORY.md"
    b = next(f for f in review.files if f.name == "b.md")
    assert [(c.key, c.local, c.snapshot) for c in b.frontmatter] == [
        ("description", "old wording", "new wording"),
        ("type", "feedback", "project"),
    ]
    assert [(r.kind, r.left, r.right) for r in b.rows if r.kind != "equal"] == [
        ("replace", "Line 2", "Line 2 changed")
    ]
    assert "-Line 2\n+Line 2 changed\n" in b.unified
    mine = next(f for f in review.files if f.name == "mine.md")
    notes = next(f for f in review.files if f.name == "notes.txt")
    assert mine.replace_removes and not notes.replace_removes
    assert [f.name for f in review.files if f.applicable] == ["b.md", "c.md"]
    assert review.status.action == "update_available"


def test_the_fingerprint_changes_with_either_side(snap, local):
    make_snapshot(snap, **{"a.md": topic("A", "a")})
    first = compare_snapshot(snap, local).fingerprint
    assert compare_snapshot(snap, local).fingerprint == first
    local.mkdir(parents=True)
    (local / "x.md").write_text(topic("X", "x"))
    second = compare_snapshot(snap, local).fingerprint
    assert second != first
    (snap / "a.md").write_text(topic("A", "a2"))
    assert compare_snapshot(snap, local).fingerprint != second


def test_the_review_flags_secrets_without_their_value(snap, local):
    token = fake_github_token()
    make_snapshot(snap, **{"leak.md": topic("Leak", "a token", body=f"x\ntoken {token}\n")})
    review = compare_snapshot(snap, local)
    leak = review.files[0]
    assert [(h.rule_id, h.line) for h in leak.secrets] == [("github-pat", 7)]
    assert not leak.applicable
    assert leak.rows == () and leak.unified == ""
    assert token not in repr(review)


def test_the_review_checks_frontmatter_and_caps(snap, local):
    make_snapshot(
        snap,
        **{
            "MEMORY.md": "".join(f"- [M{i}](m{i}.md) — m\n" for i in range(205)),
            "broken.md": '---\nname: "unclosed\n---\nBody\n',
            "bare.md": "No header at all.\n",
            "long.md": topic("Long", "long", body="x" * 5000),
        },
    )
    review = compare_snapshot(snap, local)
    problems = {f.name: f.problems for f in review.files}
    assert problems["MEMORY.md"] == ("205 lines: the agent loads only the first 200 lines",)
    assert problems["broken.md"][0].startswith("broken frontmatter: invalid YAML")
    assert problems["bare.md"] == ("no frontmatter",)
    assert problems["long.md"] == ("5,052 bytes: recall surfaces only the first 4,096 bytes",)


def test_a_snapshot_without_an_index_is_flagged(snap, local):
    make_snapshot(snap, **{"a.md": topic("A", "a")})
    assert compare_snapshot(snap, local).checks == ("the snapshot has no MEMORY.md",)


# --- hostile names and malformed snapshots -----------------------------------------------------


HOSTILE = [
    ("%2e%2e%2fevil.md", "encoded-traversal"),
    ("\uff0e\uff0e\uff0fevil.md", "encoded-traversal"),  # fullwidth ．．／
    ("..\\evil.md", "backslash"),
    ("C:evil.md", "drive-or-unc"),
    ("line\nbreak.md", "control-char"),
    (MARKER_FILENAME, "marker"),
]


@pytest.fixture
def hostile_snapshot(snap, tmp_path) -> Path:
    make_snapshot(snap, **{"ok.md": topic("OK", "fine")})
    for name, _ in HOSTILE:
        (snap / name).write_text(topic("Evil", "evil"))
    (snap / b"bad\xffname.md".decode("utf-8", "surrogateescape")).write_text("x")
    secret_file = tmp_path / "id_rsa"
    secret_file.write_text("not really a key")
    (snap / "key.md").symlink_to(secret_file)
    (snap / "nested").mkdir()
    (snap / "nested" / "deep.md").write_text(topic("Deep", "deep"))
    (snap / "huge.md").write_text("x" * 250_001)
    return snap


def test_hostile_names_are_refused_and_never_written(hostile_snapshot, local, tmp_path):
    review = compare_snapshot(hostile_snapshot, local)
    refused = {r.name: r.rule for r in review.refused}
    for name, rule in HOSTILE:
        shown = name if name.isprintable() else repr(name)[1:-1]
        assert refused[shown] == rule, name
    assert refused["bad\\udcffname.md"] == "not-utf8"
    assert refused["key.md"] == "symlink"
    assert refused["nested"] == "dir"
    assert refused["huge.md"] == "too-large"
    assert [f.name for f in review.files] == ["ok.md"]

    before = tree(tmp_path)
    result = initialize_from_snapshot(hostile_snapshot, local)
    after = tree(tmp_path)
    assert set(after) - set(before) == {
        "home/.claude/agent-memory/reviewer/ok.md",
        f"home/.claude/agent-memory/reviewer/{MARKER_FILENAME}",
    }
    assert json.loads(after[f"home/.claude/agent-memory/reviewer/{MARKER_FILENAME}"]) == {
        "syncedFrom": T2
    }
    assert result.written == ("ok.md",)
    assert len(result.refused) == len(HOSTILE) + 4


def test_merge_refuses_a_hostile_or_unknown_name_before_writing(hostile_snapshot, local):
    for name in ["%2e%2e%2fevil.md", "../evil.md", "nested/deep.md", "key.md", "nope.md"]:
        with pytest.raises(SnapshotError):
            merge_from_snapshot(hostile_snapshot, local, ["ok.md", name])
    assert not local.exists()


def test_a_symlink_in_the_local_dir_pointing_outside_is_never_written_through(
    snap, local, tmp_path
):
    make_snapshot(snap, **{"a.md": topic("A", "from snapshot")})
    local.mkdir(parents=True)
    (local / "b.md").write_text(topic("B", "b"))
    victim = tmp_path / "victim.md"
    victim.write_text("precious")
    (local / "a.md").symlink_to(victim)
    assert [(r.name, r.rule) for r in compare_snapshot(snap, local).refused] == [
        ("a.md", "symlink-escape")
    ]
    with pytest.raises(SnapshotError, match="refused"):
        merge_from_snapshot(snap, local, ["a.md"])
    assert not (local / MARKER_FILENAME).exists()
    result = replace_from_snapshot(snap, local)
    assert victim.read_text() == "precious"
    assert (local / "a.md").is_symlink()  # not a regular file: replace leaves it
    assert result.written == () and result.removed == ("b.md",)


@pytest.mark.parametrize(
    "action",
    [
        lambda s, m: initialize_from_snapshot(s, m),
        lambda s, m: merge_from_snapshot(s, m, ["a.md"]),
        lambda s, m: keep_local(s, m),
        lambda s, m: replace_from_snapshot(s, m),
    ],
)
def test_no_action_runs_on_a_malformed_snapshot(snap, local, action):
    make_snapshot(snap, None, **{"a.md": topic("A", "a")})
    (snap / "snapshot.json").write_text('{"updatedAt": "soon"}')
    with pytest.raises(SnapshotError, match="no valid snapshot"):
        action(snap, local)
    assert not local.exists()


def test_an_action_for_another_snapshot_version_is_refused(snap, local):
    make_snapshot(snap, T2, **{"a.md": topic("A", "a")})
    with pytest.raises(SnapshotChanged):
        initialize_from_snapshot(snap, local, updated_at=T1)
    with pytest.raises(SnapshotChanged):
        keep_local(snap, local, updated_at=T1)
    assert not local.exists()


def test_files_that_changed_since_approval_are_refused(snap, local):
    make_snapshot(snap, **{"a.md": topic("A", "a"), "b.md": topic("B", "b")})
    review = compare_snapshot(snap, local)
    approved = {f.name: f.snapshot_sha256 for f in review.files}
    (snap / "b.md").write_text(topic("B", "edited after the review"))
    with pytest.raises(SnapshotChanged, match="'b.md' changed"):
        initialize_from_snapshot(snap, local, updated_at=T2, expected=approved)
    with pytest.raises(SnapshotChanged):
        merge_from_snapshot(snap, local, ["a.md"], expected=approved)
    assert not local.exists()
    result = merge_from_snapshot(snap, local, ["a.md"], expected={"a.md": approved["a.md"]})
    assert result.written == ("a.md",)


# --- each action's effect on disk ---------------------------------------------------------------


@pytest.fixture
def update(snap, local) -> tuple[Path, Path]:
    """A local memory dir synced from T1, and a T2 snapshot that changes it."""
    make_snapshot(
        snap,
        T2,
        **{
            "MEMORY.md": "- [A](a.md) — a\n- [B](b.md) — b v2\n- [C](c.md) — c\n",
            "a.md": topic("A", "a"),
            "b.md": topic("B", "b v2"),
            "c.md": topic("C", "c"),
            "extra.txt": "snapshot notes",
        },
    )
    local.mkdir(parents=True)
    (local / "MEMORY.md").write_text("- [A](a.md) — a\n- [B](b.md) — b\n- [Mine](mine.md) — m\n")
    (local / "a.md").write_text(topic("A", "a"))
    (local / "b.md").write_text(topic("B", "b"))
    (local / "mine.md").write_text(topic("Mine", "mine"))
    (local / "notes.txt").write_text("local notes")
    (local / "logs").mkdir()
    (local / "logs" / "old.md").write_text("a log")
    mark(local, T1)
    return snap, local


def test_initialize_copies_every_top_level_file_and_writes_the_marker(snap, local):
    make_snapshot(snap, **{"MEMORY.md": "- [A](a.md) — a\n", "a.md": topic("A", "a")})
    (snap / ".gitkeep").write_text("")
    result = initialize_from_snapshot(snap, local)
    assert tree(local) == {
        ".gitkeep": "",
        MARKER_FILENAME: json.dumps({"syncedFrom": T2}),
        "MEMORY.md": "- [A](a.md) — a\n",
        "a.md": topic("A", "a"),
    }
    assert result.action == "initialize" and result.updated_at == T2
    assert snapshot_status(snap, local).action == "none"


def test_merge_applies_only_ticked_files_and_keeps_the_others(update):
    snap, local = update
    mtime = (local / "mine.md").stat().st_mtime_ns
    result = merge_from_snapshot(snap, local, ["c.md"])
    assert tree(local) == {
        MARKER_FILENAME: json.dumps({"syncedFrom": T2}),
        "MEMORY.md": "- [A](a.md) — a\n- [B](b.md) — b\n- [Mine](mine.md) — m\n- [C](c.md) — c\n",
        "a.md": topic("A", "a"),
        "b.md": topic("B", "b"),  # not ticked: the local version stays
        "c.md": topic("C", "c"),
        "mine.md": topic("Mine", "mine"),
        "notes.txt": "local notes",
        "logs/old.md": "a log",
    }
    assert (local / "mine.md").stat().st_mtime_ns == mtime
    assert result.written == ("c.md",)
    assert result.index_entries == ("c.md",)
    assert snapshot_status(snap, local).action == "none"


def test_merge_with_the_index_ticked_takes_the_snapshot_index(update):
    snap, local = update
    merge_from_snapshot(snap, local, ["MEMORY.md", "b.md", "extra.txt"])
    files = tree(local)
    assert files["MEMORY.md"] == (snap / "MEMORY.md").read_text()
    assert files["b.md"] == topic("B", "b v2")
    assert files["extra.txt"] == "snapshot notes"
    assert files["mine.md"] == topic("Mine", "mine")


def test_merge_of_nothing_only_writes_the_marker(update):
    snap, local = update
    before = tree(local)
    merge_from_snapshot(snap, local, [])
    after = tree(local)
    assert after.pop(MARKER_FILENAME) == json.dumps({"syncedFrom": T2})
    before.pop(MARKER_FILENAME)
    assert after == before


def test_keep_changes_nothing_but_the_marker(update):
    snap, local = update
    before = tree(local)
    mtimes = {p.name: p.stat().st_mtime_ns for p in local.iterdir() if p.is_file()}
    result = keep_local(snap, local)
    after = tree(local)
    assert after.pop(MARKER_FILENAME) == json.dumps({"syncedFrom": T2})
    before.pop(MARKER_FILENAME)
    assert after == before
    for path in local.iterdir():
        if path.is_file() and path.name != MARKER_FILENAME:
            assert path.stat().st_mtime_ns == mtimes[path.name]
    assert (result.written, result.removed) == ((), ())
    assert snapshot_status(snap, local).action == "none"


def test_replace_removes_only_top_level_md_and_copies_the_snapshot(update, tmp_path):
    snap, local = update
    outside = tmp_path / "outside.md"
    outside.write_text("not ours")
    (local / "link.md").symlink_to(outside)
    result = replace_from_snapshot(snap, local)
    assert tree(local) == {
        MARKER_FILENAME: json.dumps({"syncedFrom": T2}),
        "MEMORY.md": "- [A](a.md) — a\n- [B](b.md) — b v2\n- [C](c.md) — c\n",
        "a.md": topic("A", "a"),
        "b.md": topic("B", "b v2"),
        "c.md": topic("C", "c"),
        "extra.txt": "snapshot notes",
        "notes.txt": "local notes",  # not *.md: kept
        "logs/old.md": "a log",  # not top level: kept
        "link.md": f"-> {outside}",  # not a regular file: kept
    }
    assert outside.read_text() == "not ours"
    assert result.removed == ("mine.md",)
    assert set(result.written) == {"MEMORY.md", "b.md", "c.md", "extra.txt"}


def test_actions_never_copy_a_file_with_a_secret(update):
    snap, local = update
    (snap / "leak.md").write_text(topic("Leak", "token", body=f"{fake_github_token()}\n"))
    result = replace_from_snapshot(snap, local)
    assert not (local / "leak.md").exists()
    assert [(r.name, r.rule) for r in result.refused] == [("leak.md", "github-pat")]
    assert "Body" not in result.refused[0].reason
    with pytest.raises(SnapshotError, match="refused"):
        merge_from_snapshot(snap, local, ["leak.md"])


def test_an_action_run_twice_gives_the_same_result(update):
    snap, local = update
    replace_from_snapshot(snap, local)
    first = tree(local)
    again = replace_from_snapshot(snap, local)
    assert tree(local) == first
    assert again.written == () and again.removed == ()


# --- publishing ---------------------------------------------------------------------------------


def test_publish_writes_a_new_snapshot_and_marks_the_publisher_synced(snap, local):
    local.mkdir(parents=True)
    (local / "MEMORY.md").write_text("- [A](a.md) — a\n")
    (local / "a.md").write_text(topic("A", "a"))
    (local / ".consolidate-lock").write_text("123")
    (local / "logs").mkdir()
    (local / "logs" / "x.md").write_text("log")
    make_snapshot(snap, T1, **{"gone.md": topic("Gone", "gone"), "a.md": "old"})
    now = datetime.datetime(2026, 4, 1, 8, 0, 0, 5000, tzinfo=datetime.UTC)

    result = publish_snapshot(local, snap, now=now)

    assert result.updated_at == "2026-04-01T08:00:00.005Z"
    assert tree(snap) == {
        "snapshot.json": json.dumps({"updatedAt": "2026-04-01T08:00:00.005Z"}),
        "MEMORY.md": "- [A](a.md) — a\n",
        "a.md": topic("A", "a"),
    }
    assert result.removed == ("gone.md",)
    assert snapshot_status(snap, local).action == "none"


def test_publish_refuses_when_the_secret_filter_finds_anything(snap, local):
    local.mkdir(parents=True)
    token = fake_github_token()
    (local / "a.md").write_text(topic("A", "a"))
    (local / "b.md").write_text(topic("B", "b", body=f"use {token}\n"))
    with pytest.raises(SnapshotSecretError) as caught:
        publish_snapshot(local, snap)
    assert [(name, hit.rule_id, hit.line) for name, hit in caught.value.hits] == [
        ("b.md", "github-pat", 6)
    ]
    assert token not in str(caught.value)
    assert not snap.exists()
    assert not (local / MARKER_FILENAME).exists()


def test_publish_refuses_an_empty_memory_dir(snap, local):
    local.mkdir(parents=True)
    (local / "notes.txt").write_text("no memory")
    with pytest.raises(SnapshotError, match="no memory to publish"):
        publish_snapshot(local, snap)
    assert not snap.exists()


def test_a_published_snapshot_initializes_a_teammate(snap, local, tmp_path):
    local.mkdir(parents=True)
    (local / "MEMORY.md").write_text("- [A](a.md) — a\n")
    (local / "a.md").write_text(topic("A", "a"))
    publish_snapshot(local, snap)
    teammate = tmp_path / "teammate" / "agent-memory" / "reviewer"
    assert snapshot_status(snap, teammate).action == "initialize"
    initialize_from_snapshot(snap, teammate)
    assert tree(teammate) == tree(local)
