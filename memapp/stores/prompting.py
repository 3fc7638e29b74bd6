"""The memory section of an agent's system prompt, with the mode chosen by flags
(docs/design.md §9)."""

from __future__ import annotations

from memapp.memdir.prompt import PromptRequest, PromptResult, assemble_prompt, choose_mode
from memapp.stores.events import record_event_later
from memapp.stores.flags import get_flags
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


def assemble_for(user, private: Store, memory_dir: str | None = None) -> PromptResult:
    """Assemble the prompt for the user's private store of a project and its team store."""
    project = private.project
    flags = get_flags(project)
    team = team_store_for(user, project) if flags["team_memory"] else None
    # The daily-log prompt promises that the logs are distilled later: consolidation does that,
    # so with consolidation off the prompt never promises it (docs/design.md §14.8).
    daily_log = flags["daily_log_mode"] and flags["consolidation"]
    mode = choose_mode(flags["auto_memory"], flags["team_memory"], daily_log, team is not None)
    request = PromptRequest(
        mode=mode,
        private_dir=private.path,
        team_dir=team.path if team is not None else None,
        skip_index=flags["skip_index"],
        search_past_context=flags["search_past_context"],
        max_lines=flags["index_max_lines"],
        max_bytes=flags["index_max_bytes"],
        private_display_dir=memory_dir,
        team_display_dir=f"{memory_dir.rstrip('/')}/team" if memory_dir else None,
    )
    result = assemble_prompt(request)
    # Index blocks come private first, then team (when the mode shows a team index).
    for store, info in zip([private, team], result.indexes, strict=False):
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
    return result
