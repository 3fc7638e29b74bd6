"""Editing an agent's JSON settings file in place: read it, change only memhub's entries, back
it up, write it atomically. Shared by every agent's install module."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memapp.memdir.atomic import write_atomic_bytes

__all__ = ["SettingsError", "edit_json"]


class SettingsError(Exception):
    """A settings file that is not a JSON object: left as it is."""


def _load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} does not hold a JSON object; fix it first")
    return data


def edit_json(path: Path, change: Callable[[dict[str, Any]], None]) -> str:
    """Apply `change` to the object in `path` (missing: `{}`); when that changed anything,
    copy the file to `<name>.memhub-backup-<time>` first and write the new text. Returns what
    happened, in words."""
    before = _load(path)
    after = json.loads(json.dumps(before))
    change(after)
    if after == before:
        return f"{path}: unchanged"
    backup = None
    if path.exists():
        backup = path.with_name(f"{path.name}.memhub-backup-{time.strftime('%Y%m%d-%H%M%S')}")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic_bytes(path, (json.dumps(after, indent=2, ensure_ascii=False) + "\n").encode())
    return f"{path}: written" + (f" (the previous file is in {backup})" if backup else "")
