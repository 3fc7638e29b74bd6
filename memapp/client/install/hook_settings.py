"""memhub's hook entries in a settings object of the shape Claude Code, Gemini CLI and Codex CLI
share: `{"hooks": {Event: [{"matcher"?: …, "hooks": [{"type": "command", "command": …}]}]}}`
(docs/design.md §28). An entry is memhub's when its command runs `memhub-agent hook <agent> `;
nothing else is touched, and a group left empty by a removal goes with it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["hook_events", "with_hooks", "without_hooks"]


def _ours(command: object, agent: str) -> bool:
    return isinstance(command, str) and f"memhub-agent hook {agent} " in command


def without_hooks(settings: dict[str, Any], agent: str) -> None:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                mine = [h for h in inner if isinstance(h, dict) and _ours(h.get("command"), agent)]
                if mine:
                    group = {**group, "hooks": [h for h in inner if h not in mine]}
                    if not group["hooks"]:
                        continue
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]


def with_hooks(
    settings: dict[str, Any], agent: str, program: str, events: Mapping[str, str]
) -> None:
    """memhub's hooks for `events` ({agent's event: memhub-agent's name}), replacing its own
    earlier ones."""
    without_hooks(settings, agent)
    hooks = settings.setdefault("hooks", {})
    for event, name in events.items():
        command = {"type": "command", "command": f"{program} hook {agent} {name}"}
        hooks.setdefault(event, []).append({"hooks": [command]})


def hook_events(path: Path, agent: str) -> list[str]:
    """The events of `path`'s settings that have a memhub hook of `agent`."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
        return [
            event
            for event, groups in (settings.get("hooks") or {}).items()
            if any(
                _ours(h.get("command"), agent)
                for g in groups
                if isinstance(g, dict)
                for h in g.get("hooks") or []
                if isinstance(h, dict)
            )
        ]
    except (OSError, ValueError, AttributeError, TypeError):
        return []
