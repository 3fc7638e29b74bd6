"""The database a memhub started as a subprocess begins with.

Such instances start as the README's run command does, with `manage.py migrate` on an empty
SQLite file. That gives the same file every time, so each test process runs the real command
once and copies its result into each instance's data dir.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

MANAGE = Path(__file__).resolve().parents[1] / "manage.py"
DATABASE = "memhub.sqlite3"  # memapp.settings' SQLite file in MEMHUB_DATA_DIR


@cache
def _migrated() -> Path:
    data_dir = Path(tempfile.mkdtemp(prefix="memhub-migrated-"))
    atexit.register(shutil.rmtree, data_dir, ignore_errors=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(data_dir), "MEMHUB_DATA_DIR": str(data_dir)}
    command = [sys.executable, str(MANAGE), "migrate", "--noinput", "-v", "0", "--skip-checks"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode:
        raise RuntimeError(f"manage.py migrate failed:\n{result.stdout}{result.stderr}")
    return data_dir / DATABASE


def migrate(data_dir: Path) -> None:
    """Leave in `data_dir` what `manage.py migrate` makes of it when it holds no database."""
    target = data_dir / DATABASE
    assert not target.exists(), f"{target} exists already"
    data_dir.mkdir(parents=True, exist_ok=True)
    # SQLite's backup copies what the write-ahead log holds too, whatever migrate left there.
    with sqlite3.connect(_migrated()) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    source.close()
    copy.close()
