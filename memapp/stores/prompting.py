"""The memory section of an agent's system prompt, with the mode chosen by flags
(docs/design.md §9), and the part of it an agent that writes its own section lacks: the team
index (docs/design.md §16)."""

from __future__ import annotations

from memapp.memdir.prompt import (
    PromptRequest,
    PromptResult,
    assemble_prompt,
    choose_mode,
    team_index_block,
)
from memapp.stores.events import record_event_later
from memapp.stores.flags import get_flags, index_caps
from memapp.stores.models import Store


def team_store_for(user, project) -> Store | None:
    """The project's main team store, when the user is a member."""
    if project is None:
        return None
    return (
        Store.objects.filter(project=project, kind=Store.Kind.TEAM, mount="", project__members=user)
        .order_by("pk")
        .first()
    )


def agent_store_for(user, project, agent_type: str, scope: str) -> Store | None:
    """The user's memory of one agent in one scope (docs/design.md §13): user scope belongs to
    no project, project and local scope to this project's checkouts."""
    stores = Store.objects.filter(
        kind=Store.Kind.AGENT, owner=user, agent_type=agent_type, agent_scope=scope
    )
    if scope != Store.AgentScope.USER:
        stores = stores.filter(project=project)
    # A user-scope dir discovered on this host wins over one uploaded from another machine.
    return stores.order_by("origin", "pk").first()


def _record_index(user, project, store: Store, info) -> None:
    record_event_later(
        "index_loaded",
        project=project,
        user=user,
        store=store,
        file_count=store.file_count,
        line_count=info.line_count,
        truncated_by_lines=info.was_line_truncated,
        truncated_by_bytes=info.was_byte_truncated,
    )


def _daily_log(flags: dict) -> bool:
    """The daily-log mode, while consolidation distills the logs: its prompt promises that,
    so with consolidation off no prompt chooses it (docs/design.md §14.8)."""
    return flags["daily_log_mode"] and flags["consolidation"]


def assemble_for(user, private: Store, memory_dir: str | None = None) -> PromptResult:
    """Assemble the prompt for the user's private store of a project and its team store (or,
    for an agent store, that agent's own directory in individual mode)."""
    project = private.project
    flags = get_flags(project)
    agent = private.kind == Store.Kind.AGENT
    team = team_store_for(user, project) if flags["team_memory"] and not agent else None
    mode = choose_mode(
        flags["auto_memory"], flags["team_memory"], _daily_log(flags), team is not None
    )
    if agent and mode != "disabled":
        mode = "individual"  # an agent keeps no daily logs and has no team scope
    max_lines, max_bytes = index_caps(flags)
    request = PromptRequest(
        mode=mode,
        private_dir=private.path,
        team_dir=team.path if team is not None else None,
        skip_index=flags["skip_index"],
        search_past_context=flags["search_past_context"],
        max_lines=max_lines,
        max_bytes=max_bytes,
        private_display_dir=memory_dir,
        team_display_dir=f"{memory_dir.rstrip('/')}/team" if memory_dir else None,
    )
    result = assemble_prompt(request)
    # Index blocks come private first, then team (when the mode shows a team index).
    for store, info in zip([private, team], result.indexes, strict=False):
        _record_index(user, project, store, info)
    return result


def team_index_for(user, project, memory_dir: str | None = None) -> str:
    """The project's team index as the combined prompt would show it, or "" when the prompt
    would show none (auto or team memory off, daily-log mode, skip_index, not a member)."""
    flags = get_flags(project)
    team = team_store_for(user, project) if flags["team_memory"] else None
    mode = choose_mode(
        flags["auto_memory"], flags["team_memory"], _daily_log(flags), team is not None
    )
    if mode != "combined" or flags["skip_index"]:
        return ""
    shown = f"{memory_dir.rstrip('/')}/team" if memory_dir else None
    text, info = team_index_block(team.path, shown, *index_caps(flags))
    _record_index(user, project, team, info)
    return text
