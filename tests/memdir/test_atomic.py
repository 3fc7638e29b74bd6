import os
import stat
from pathlib import Path

import pytest

from memapp.memdir import atomic
from memapp.memdir.atomic import delete_file, write_atomic, write_atomic_bytes, write_atomic_files


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_it_writes_utf8_text(tmp_path):
    target = tmp_path / "user_role.md"
    write_atomic(target, "Ana — ünïcode ✓\n")
    assert target.read_bytes() == "Ana — ünïcode ✓\n".encode()
    assert _names(tmp_path) == ["user_role.md"]


def test_it_replaces_existing_content(tmp_path):
    target = tmp_path / "a.md"
    target.write_text("old old old old\n")
    write_atomic(str(target), "new\n")
    assert target.read_text() == "new\n"
    assert _names(tmp_path) == ["a.md"]


def test_it_writes_text_exactly_without_newline_translation(tmp_path):
    target = tmp_path / "a.md"
    write_atomic(target, "a\r\nb\rc\n")
    assert target.read_bytes() == b"a\r\nb\rc\n"


def test_it_writes_empty_text(tmp_path):
    target = tmp_path / "a.md"
    target.write_text("something")
    write_atomic(target, "")
    assert target.read_bytes() == b""


def test_it_writes_bytes(tmp_path):
    target = tmp_path / "a.md"
    write_atomic_bytes(target, b"\xff\xfe not utf-8")
    assert target.read_bytes() == b"\xff\xfe not utf-8"


@pytest.mark.parametrize("value", [b"bytes", None, 3, ["a"]])
def test_it_refuses_text_that_is_not_str(tmp_path, value):
    with pytest.raises(TypeError):
        write_atomic(tmp_path / "a.md", value)
    assert _names(tmp_path) == []


def test_it_refuses_bytes_that_are_not_bytes(tmp_path):
    with pytest.raises(TypeError):
        write_atomic_bytes(tmp_path / "a.md", "text")
    assert _names(tmp_path) == []


def test_unencodable_text_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "a.md"
    target.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "lone surrogate \udc80")
    assert target.read_text() == "old\n"
    assert _names(tmp_path) == ["a.md"]


def test_a_failing_replace_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "a.md"
    target.write_text("old\n")

    def boom(self, other):
        raise OSError("disk on fire")

    monkeypatch.setattr(Path, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert _names(tmp_path) == ["a.md"]


def test_a_failing_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "a.md"
    target.write_text("old\n")
    real_write = os.write
    calls = []

    def half_then_fail(fd, data):
        if calls:
            raise OSError("no space left")
        calls.append(fd)
        return real_write(fd, bytes(data[:3]))

    monkeypatch.setattr(atomic.os, "write", half_then_fail)
    with pytest.raises(OSError, match="no space left"):
        write_atomic(target, "new content\n")
    assert calls, "the write was attempted"
    assert target.read_text() == "old\n"
    assert _names(tmp_path) == ["a.md"]


def test_a_failing_fsync_leaves_no_target_when_there_was_none(tmp_path, monkeypatch):
    def fail(fd):
        raise OSError("I/O error")

    monkeypatch.setattr(atomic.os, "fsync", fail)
    with pytest.raises(OSError, match="I/O error"):
        write_atomic(tmp_path / "new.md", "text")
    assert _names(tmp_path) == []


def test_an_interrupt_also_cleans_up(tmp_path, monkeypatch):
    def interrupt(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "new.md", "text")
    assert _names(tmp_path) == []


def test_the_temp_file_is_hidden_and_not_markdown(tmp_path, monkeypatch):
    seen = []
    real_replace = Path.replace

    def spy(self, other):
        seen.append(self.name)
        assert _names(tmp_path) == [self.name]
        return real_replace(self, other)

    monkeypatch.setattr(Path, "replace", spy)
    write_atomic(tmp_path / "topic.md", "x")
    [name] = seen
    assert name.startswith(".topic.md.")
    assert not name.endswith(".md")
    assert Path(name).suffix == ".tmp"


def test_it_keeps_the_permission_bits_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "a.md"
    target.write_text("old")
    target.chmod(0o640)
    write_atomic(target, "new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    target.chmod(0o604)
    write_atomic(target, "newer")
    assert stat.S_IMODE(target.stat().st_mode) == 0o604


def test_a_new_file_gets_the_usual_mode_under_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.md", "x")
        os.umask(0o077)
        write_atomic(tmp_path / "b.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.md").stat().st_mode) == 0o600


def test_a_symlink_is_replaced_not_written_through(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    store = tmp_path / "store"
    store.mkdir()
    link = store / "a.md"
    link.symlink_to(outside)
    write_atomic(link, "memory")
    assert outside.read_text() == "precious"
    assert not link.is_symlink()
    assert link.read_text() == "memory"


def test_a_missing_parent_directory_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "team" / "a.md", "x")
    assert _names(tmp_path) == []


def test_a_directory_in_the_way_raises_and_cleans_up(tmp_path):
    (tmp_path / "a.md").mkdir()
    with pytest.raises(OSError):
        write_atomic(tmp_path / "a.md", "x")
    assert _names(tmp_path) == ["a.md"]
    assert (tmp_path / "a.md").is_dir()


def _spy_fsync(monkeypatch) -> list[bool]:
    """Record each fsync: True for a directory, False for a file."""
    synced = []
    real_fsync = os.fsync

    def spy(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", spy)
    return synced


def test_it_syncs_the_file_and_the_directory(tmp_path, monkeypatch):
    synced = _spy_fsync(monkeypatch)
    write_atomic(tmp_path / "a.md", "x")
    assert synced == [False, True]


def test_a_write_that_need_not_be_durable_is_atomic_without_fsync(tmp_path, monkeypatch):
    synced = _spy_fsync(monkeypatch)
    (tmp_path / "a.md").write_text("old")
    write_atomic_bytes(tmp_path / "a.md", b"new", durable=False)
    assert (tmp_path / "a.md").read_bytes() == b"new"
    assert _names(tmp_path) == ["a.md"]
    assert synced == []


@pytest.mark.parametrize("count", [3, 40])  # one at a time, and in parallel
def test_write_atomic_files_writes_every_file_and_syncs_each_directory_once(
    tmp_path, monkeypatch, count
):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "0.md").write_text("old")
        (tmp_path / sub / "0.md").chmod(0o600)
    files = {
        tmp_path / sub / f"{i}.md": f"{sub} {i}".encode() for sub in "ab" for i in range(count)
    }
    synced = _spy_fsync(monkeypatch)
    write_atomic_files(files)
    for path, data in files.items():
        assert path.read_bytes() == data
    assert stat.S_IMODE((tmp_path / "a" / "0.md").stat().st_mode) == 0o600  # mode kept
    assert _names(tmp_path / "a") == sorted(f"{i}.md" for i in range(count))  # no temp left
    assert synced.count(False) == len(files) and synced.count(True) == 2


@pytest.mark.parametrize("others", [0, 40])  # one at a time, and in parallel
def test_write_atomic_files_raises_and_leaves_no_torn_file(tmp_path, others):
    (tmp_path / "a.md").write_text("old a")
    files = {tmp_path / "a.md": b"new a", tmp_path / "missing" / "b.md": b"b"}
    files.update({tmp_path / f"{i}.md": b"other" for i in range(others)})
    with pytest.raises(FileNotFoundError):
        write_atomic_files(files)
    assert (tmp_path / "a.md").read_text() in {"old a", "new a"}
    assert {p.read_bytes() for p in tmp_path.glob("*.md") if p.name != "a.md"} <= {b"other"}
    assert not [name for name in _names(tmp_path) if name.endswith(".tmp")]


def test_delete_file_removes_the_file(tmp_path):
    target = tmp_path / "a.md"
    target.write_text("x")
    assert delete_file(target) is True
    assert _names(tmp_path) == []


def test_delete_file_of_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        delete_file(tmp_path / "gone.md")
    assert delete_file(tmp_path / "gone.md", missing_ok=True) is False


def test_delete_file_removes_a_symlink_not_its_target(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    link = tmp_path / "a.md"
    link.symlink_to(outside)
    assert delete_file(link) is True
    assert outside.read_text() == "precious"
    assert not link.exists()


def test_a_mode_given_holds_for_a_new_file_and_an_existing_one_from_the_first_byte(
    tmp_path, monkeypatch
):
    seen = []
    real_write = os.write

    def spy(fd, data):
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_write(fd, data)

    target = tmp_path / "token.json"
    target.write_text("old")
    target.chmod(0o644)
    monkeypatch.setattr(os, "write", spy)
    write_atomic_bytes(target, b"secret", mode=0o600)
    write_atomic_bytes(tmp_path / "new.json", b"secret", mode=0o600)
    monkeypatch.undo()

    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o600
    assert seen == [0o600, 0o600]  # never readable by others, not even while being written


def test_a_file_another_writer_changes_right_after_the_rename_is_not_vouched_for(
    tmp_path, monkeypatch
):
    """The stat returned for it matches no later stat of the file, so a rescan trusting the
    pull's stats reads it again instead of keeping the pulled text."""
    target = tmp_path / "a.md"
    rename = Path.replace

    def rename_then_an_editor_writes(self, destination):
        renamed = rename(self, destination)
        with open(destination, "r+b") as file:  # in place, as an editor or agent tool does
            file.truncate()
            file.write(b"the editor's longer text")
        return renamed

    monkeypatch.setattr(Path, "replace", rename_then_an_editor_writes)
    stats = write_atomic_files({target: b"pulled"})
    now = target.stat()
    stamp = (now.st_ino, now.st_mtime_ns, now.st_ctime_ns, now.st_size)
    given = stats[target]
    assert (given.st_ino, given.st_mtime_ns, given.st_ctime_ns, given.st_size) != stamp
    assert target.read_bytes() == b"the editor's longer text"


def test_a_copy_keeps_the_age_it_came_with_and_nothing_else_moves_it(tmp_path):
    """What a server or another machine says a file's mtime is (ms), kept when it is a whole
    number not in the future; a malformed or missing one leaves the file as written."""
    import time

    from memapp.memdir.atomic import keep_mtime

    path = tmp_path / "a.md"
    path.write_text("a")
    month_ago_ms = int((time.time() - 30 * 86400) * 1000)
    keep_mtime(path, month_ago_ms)
    assert path.stat().st_mtime_ns // 1_000_000 == month_ago_ms
    for malformed in (None, "123", 1.5, True, -5, [1]):
        keep_mtime(path, malformed)
        assert path.stat().st_mtime_ns // 1_000_000 == month_ago_ms
    keep_mtime(path, int((time.time() + 86400) * 1000))
    assert path.stat().st_mtime <= time.time()
