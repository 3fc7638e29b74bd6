"""The `.consolidate-lock` protocol (docs/design.md §14.1), against real processes: a live PID
holds the lock, a dead one is reclaimed, an hour-old one is stale, a second taker backs off, a
failed run puts the previous mtime back, and odd lock files are stale, never trusted."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from memapp.memdir.consolidate_lock import (
    LOCK_NAME,
    LockUnavailable,
    read_lock,
    release_lock,
    restore_lock,
    try_acquire_lock,
)

HOUR = 3600.0


@pytest.fixture
def live_pid():
    """A process that is running for the whole test (another agent, say)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process.pid
    process.kill()
    process.wait()


@pytest.fixture
def dead_pid():
    """The PID of a process that has exited."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_lock(directory, content: str, age_s: float = 0.0):
    path = directory / LOCK_NAME
    path.write_text(content)
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return stamp


def test_a_live_pid_holds_the_lock(tmp_path, live_pid):
    stamp = write_lock(tmp_path, f"{live_pid}\n", age_s=60)
    assert read_lock(tmp_path).held()
    assert try_acquire_lock(tmp_path) is None
    assert (tmp_path / LOCK_NAME).read_text() == f"{live_pid}\n"
    assert (tmp_path / LOCK_NAME).stat().st_mtime == pytest.approx(stamp)


def test_a_dead_pid_is_reclaimed(tmp_path, dead_pid):
    stamp = write_lock(tmp_path, str(dead_pid), age_s=60)
    prior, before = try_acquire_lock(tmp_path)
    assert prior == pytest.approx(stamp) and before.pid == dead_pid
    assert (tmp_path / LOCK_NAME).read_text().strip() == str(os.getpid())


def test_a_live_pid_older_than_an_hour_is_stale(tmp_path, live_pid):
    stamp = write_lock(tmp_path, str(live_pid), age_s=HOUR + 5)
    assert not read_lock(tmp_path).held()
    prior, _ = try_acquire_lock(tmp_path)
    assert prior == pytest.approx(stamp)


def test_no_lock_yet_means_no_previous_consolidation(tmp_path):
    prior, before = try_acquire_lock(tmp_path, pid=4242)
    assert prior is None and not before.exists
    assert read_lock(tmp_path).pid == 4242


def test_a_second_taker_backs_off_while_the_first_holds_it(tmp_path, live_pid):
    assert try_acquire_lock(tmp_path, pid=live_pid) is not None
    assert try_acquire_lock(tmp_path, pid=os.getpid()) is None
    assert read_lock(tmp_path).pid == live_pid


def test_a_failed_run_restores_the_previous_mtime_with_no_holder(tmp_path, dead_pid):
    stamp = write_lock(tmp_path, str(dead_pid), age_s=3 * 86400)
    prior, _ = try_acquire_lock(tmp_path)
    assert time.time() - (tmp_path / LOCK_NAME).stat().st_mtime < 60  # taking it stamps now
    restore_lock(tmp_path, prior)
    assert (tmp_path / LOCK_NAME).stat().st_mtime == pytest.approx(stamp)
    state = read_lock(tmp_path)
    assert state.pid is None and not state.held()


def test_a_failed_first_run_removes_the_lock(tmp_path):
    prior, _ = try_acquire_lock(tmp_path)
    restore_lock(tmp_path, prior)
    assert not (tmp_path / LOCK_NAME).exists()


def test_a_finished_run_leaves_its_start_time_and_no_holder(tmp_path):
    started = time.time() - 30
    try_acquire_lock(tmp_path)
    release_lock(tmp_path, started)
    state = read_lock(tmp_path)
    assert state.mtime == pytest.approx(started) and state.pid is None
    assert try_acquire_lock(tmp_path) is not None  # this process may run again at once


@pytest.mark.parametrize("content", ["not a pid", "12ab", "-5", "9" * 80, "\x00\x01"])
def test_a_lock_that_is_not_a_number_is_stale_and_reported(tmp_path, content):
    stamp = write_lock(tmp_path, content, age_s=10)
    state = read_lock(tmp_path)
    assert state.pid is None and state.problem == "does not hold a PID" and not state.held()
    prior, _ = try_acquire_lock(tmp_path)
    assert prior == pytest.approx(stamp)


def test_an_empty_directory_in_place_of_the_lock_is_stale_and_replaced(tmp_path):
    (tmp_path / LOCK_NAME).mkdir()
    state = read_lock(tmp_path)
    assert state.problem == "is a directory" and not state.held()
    prior, _ = try_acquire_lock(tmp_path)
    assert prior is None and (tmp_path / LOCK_NAME).is_file()


def test_a_directory_with_files_in_place_of_the_lock_is_never_emptied(tmp_path):
    (tmp_path / LOCK_NAME).mkdir()
    (tmp_path / LOCK_NAME / "keep.txt").write_text("someone's file")
    with pytest.raises(LockUnavailable):
        try_acquire_lock(tmp_path)
    assert (tmp_path / LOCK_NAME / "keep.txt").read_text() == "someone's file"


def test_a_symlinked_lock_is_replaced_not_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("precious")
    directory = tmp_path / "memory"
    directory.mkdir()
    (directory / LOCK_NAME).symlink_to(outside)
    assert read_lock(directory).problem == "is not a regular file"
    assert try_acquire_lock(directory) is not None
    assert outside.read_text() == "precious"
