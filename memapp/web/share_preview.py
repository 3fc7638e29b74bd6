"""What "Share with the team" will put in the team store, shown before anything is copied:
each memory as teammates will read it and the name it will have there (docs/design.md §24)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from memapp.memdir.frontmatter import parse_memory
from memapp.stores.actions import FileRejected, free_path, store_file_path
from memapp.stores.models import Store
from memapp.stores.prompting import team_store_for
from memapp.web.markdown import render_markdown


@dataclass(frozen=True)
class SharePreview:
    path: str
    target: str  # its name in the team store
    unchanged: bool  # the team store already has these very bytes: nothing is copied
    name: str
    description: str
    type: str
    html: str


def share_preview(store: Store, team: Store, paths: list[str]) -> list[SharePreview]:
    """One preview per path, as `do_share_memories` would copy it (the same naming rule: a
    different memory of the same name in the team store makes the copy `<stem>-shared.md`)."""
    team_root = Path(team.path)
    previews = []
    for path in paths:
        try:
            data = store_file_path(store, path).read_bytes()
        except (FileRejected, OSError):
            continue
        existing = team_root / path
        unchanged = existing.is_file() and existing.read_bytes() == data
        memory = parse_memory(data, path=path)
        previews.append(
            SharePreview(
                path=path,
                target=path if unchanged else free_path(team_root, path, "shared"),
                unchanged=unchanged,
                name=memory.name or path.rsplit("/", 1)[-1].removesuffix(".md"),
                description=memory.description or "",
                type=memory.type or "",
                html=render_markdown(memory.body),
            )
        )
    return previews


def confirm_share(
    request: HttpRequest, store: Store, paths: list[str], allow_user: bool, cancel: str
) -> HttpResponse:
    """The question "Share with the team" asks first: its second POST, to the same URL with
    `confirm=yes`, copies (docs/design.md §23, ask first)."""
    team = team_store_for(request.user, store.project) if store.kind == Store.Kind.PRIVATE else None
    if team is None:
        messages.error(request, "Not shared: this memory's project has no team store you share.")
        return redirect(cancel)
    context = {
        "store": store,
        "team": team,
        "previews": share_preview(store, team, paths),
        "allow_user": allow_user,
        "action": request.path,
        "cancel": cancel,
    }
    return render(request, "memapp/share.html", context)
