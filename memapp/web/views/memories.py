"""One memory: read it, edit it, create one, forget one."""

from __future__ import annotations

import codecs
from typing import NamedTuple

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from memapp.memdir.freshness import memory_age, memory_header, staleness_note
from memapp.memdir.frontmatter import FrontmatterError, Memory, parse_memory
from memapp.memdir.index import format_index_entry
from memapp.memdir.lint import link_targets, memory_warnings
from memapp.memdir.store_files import MAX_ENTRY_BYTES, FileRejected, checksum
from memapp.stores.access import get_memory_for_user, get_store_for_user
from memapp.stores.actions import (
    ODD_NAME,
    READ_ONLY,
    EditConflict,
    do_forget_memory,
    do_keep_disk_version,
    do_save_memory,
    do_share_memories,
    edited_text,
    listed_file_path,
)
from memapp.stores.history import index_lines
from memapp.stores.models import MemoryFile, Store
from memapp.stores.prompting import team_store_for
from memapp.web.diff import diff_lines
from memapp.web.forms import MemoryForm, unknown_type, unknown_type_warning
from memapp.web.markdown import render_markdown
from memapp.web.share_preview import confirm_share
from memapp.web.undo import undo_button
from teamsync.models import BlockedFile


def _read(store: Store, path: str) -> bytes:
    return listed_file_path(store, path).read_bytes()


def _shown(data: bytes) -> bytes:
    """The part of a file its page shows: all of it, or the first MAX_ENTRY_BYTES of a larger
    one, not cutting a character in two (a file that is not UTF-8 is cut as it is)."""
    if len(data) <= MAX_ENTRY_BYTES:
        return data
    head = data[:MAX_ENTRY_BYTES]
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(head, final=False).encode()
    except UnicodeDecodeError:
        return head


def _too_large(data: bytes) -> str:
    """What to say of a file larger than a memory may be; "" for any other."""
    if len(data) <= MAX_ENTRY_BYTES:
        return ""
    return (
        f"This file is {len(data):,} bytes, over the {MAX_ENTRY_BYTES:,} a memory may hold, so "
        f"only its first {MAX_ENTRY_BYTES:,} are shown and it cannot be edited here: forget it, "
        "or shorten it on disk."
    )


def _memory_url(store: Store, path: str) -> str:
    return reverse("memory", kwargs={"store_id": store.pk, "path": path})


def _names(store: Store) -> list[tuple[str, str]]:
    """The store's memories' (path, name), in the store's order."""
    return list(store.files.values_list("path", "name"))


def _link_resolver(store: Store, names: list[tuple[str, str]] | None = None):
    """Map `[[slug]]` to a memory of the same store by its name or its file name."""
    targets = {}
    for path, name in _names(store) if names is None else names:
        targets.setdefault(path.rsplit("/", 1)[-1].removesuffix(".md"), path)
        if name:
            targets[name] = path

    def resolve(slug: str) -> str | None:
        path = targets.get(slug)
        return _memory_url(store, path) if path else None

    return resolve


def _warnings(
    store: Store,
    memory_type: str | None,
    body: str,
    description: str | None,
    names: list[tuple[str, str]] | None = None,
):
    """The edit form's warnings, `[[links]]` to names no memory of the store has included."""
    targets = link_targets(_names(store) if names is None else names)
    team = store.kind == Store.Kind.TEAM
    return memory_warnings(memory_type or None, body, description, targets, team=team)


def _preview(store: Store, body: str) -> str:
    return render_markdown(body, resolve_link=_link_resolver(store))


def _backlinks(file: MemoryFile, rows: list[tuple[str, str, list]]) -> list[MemoryFile]:
    """The other memories of `rows` (path, name, links) whose `[[links]]` name `file`."""
    names = {file.path.rsplit("/", 1)[-1].removesuffix(".md")} | (
        {file.name} if file.name else set()
    )
    return [
        MemoryFile(store_id=file.store_id, path=path, name=name)
        for path, name, links in rows
        if path != file.path and names & set(links)
    ]


@login_required
def memory_detail(request: HttpRequest, store_id: int, path: str) -> HttpResponse:
    store, file = get_memory_for_user(request.user, store_id, path)
    data = _read(store, path)
    # A file larger than a memory may be (an agent's dump) is shown in part: whole, a 50 MB
    # file made a page of 50 MB that took seconds to load.
    memory = parse_memory(_shown(data), path=path)
    odd = unknown_type(memory)
    # One read of the store's names and links for the links, backlinks and warnings.
    rows = list(store.files.values_list("path", "name", "links"))
    names = [(path, name) for path, name, _links in rows]
    resolve = _link_resolver(store, names)
    context = {
        "store": store,
        "file": file,
        "memory": memory,
        "html": render_markdown(memory.body, resolve_link=resolve),
        "age": memory_age(file.mtime_ms),
        # The staleness note an older header starts with is shown on its own, highlighted.
        "header": memory_header(path, file.mtime_ms).rpartition("\n\n")[2],
        "staleness": staleness_note(file.mtime_ms),
        "links": [(slug, resolve(slug)) for slug in memory.links],
        "backlinks": _backlinks(file, rows),
        "warnings": _warnings(store, memory.type, memory.body, memory.description, names)
        + ([unknown_type_warning(odd)] if odd else []),
        "unknown_type": odd,
        "odd_name": ODD_NAME if "\\" in path else "",
        "recalled": store.recall_stats.filter(path=path).first(),
        "kept_back": BlockedFile.objects.filter(store=store, key=path).first(),
        "too_large": _too_large(data),
        "team_store": team_store_for(request.user, store.project)
        if store.kind == Store.Kind.PRIVATE
        else None,
    }
    return render(request, "memapp/memory.html", context)


def _index_line(store: Store, path: str, memory: Memory) -> str:
    """The memory's MEMORY.md line as it is (byte for byte), or the one saving would write."""
    line = index_lines(store.path, [path]).get(path)
    if line is not None:
        return line
    try:
        return format_index_entry(memory.name or "", path, memory.description or "")
    except ValueError:  # a file name no index line can link to
        return ""


class _Saved(NamedTuple):
    """What saving a form led to: the answer to send (a redirect, the conflict page), or None
    to show the form again with its errors and the `warnings` to confirm."""

    response: HttpResponse | None
    warnings: list[str]


def _save(request: HttpRequest, store: Store, form: MemoryForm, path: str | None) -> _Saved:
    """Save a valid form through `do_save_memory`, or say why not (warnings, a conflict)."""
    data = form.cleaned_data
    warnings = _warnings(store, data["type"], data["body"], data["description"])
    if warnings and "save_anyway" not in request.POST:
        return _Saved(None, warnings)
    try:
        file = do_save_memory(
            store,
            request.user,
            name=data["name"],
            description=data["description"],
            memory_type=data["type"],
            body=data["body"],
            path=path,
            base_sha256=data["base_sha256"] or None,
            index_line=data["index_line"] or None,
        )
    except EditConflict as conflict:
        mine = form.cleaned_data
        page = render(
            request,
            "memapp/conflict.html",
            {
                "store": store,
                "path": path,
                "mine": mine,
                "diff": diff_lines(conflict.disk_text, _my_text(conflict.disk_text, path, mine)),
                "form": MemoryForm(initial={**mine, "base_sha256": conflict.disk_sha256}),
            },
            status=409,
        )
        return _Saved(page, [])
    except (FrontmatterError, FileRejected) as exc:
        form.add_error(None, str(exc))
        return _Saved(None, [])
    except ValueError:  # an index line that is not this memory's
        example = format_index_entry(data["name"], path or "file.md", data["description"])
        form.add_error(
            "index_line",
            f"Nothing was saved: the index line must be one list item linking to "
            f"{path or 'the file'}, such as {example}",
        )
        return _Saved(None, [])
    messages.success(request, f"Saved {file.path}.")
    return _Saved(redirect(_memory_url(store, file.path)), [])


def _my_text(disk_text: str, path: str, mine: dict) -> str:
    """The file the refused edit would have written over what is on disk now."""
    previous = parse_memory(disk_text.encode("utf-8"), path=path)
    fields = (mine["name"], mine["description"], mine["type"], mine["body"])
    try:
        return edited_text(previous, path, *fields)
    except FrontmatterError:
        return mine["body"]


def _unread_header(data: bytes, memory: Memory) -> dict | None:
    """Why the file's header could not be read, and its text: saving writes the header from
    the form's fields, so the person sees what it replaces and can copy from it."""
    if not memory.problem or memory.header_unclosed:  # saving that one is refused instead
        return None
    text = data.decode("utf-8", "replace")
    header = text[: len(text) - len(memory.body)] if text.endswith(memory.body) else ""
    return {"problem": memory.problem, "text": header.strip("\n")}


def _keep_disk(request: HttpRequest, store: Store, path: str, data: bytes) -> HttpResponse:
    """The conflict page's "Keep the version on disk": the person's edit is kept in the
    memory's history (not on disk), so it stays restorable as the page says."""
    form = MemoryForm(request.POST)
    form.is_valid()
    fields = ("name", "description", "type", "body")
    mine = {f: form.cleaned_data.get(f, request.POST.get(f, "")) for f in fields}
    mine_text = _my_text(data.decode("utf-8", "replace"), path, mine)
    refused = do_keep_disk_version(store, request.user, path, mine_text)
    if refused:
        messages.warning(
            request,
            f"Kept the version on disk of {path}. Your edit was not kept anywhere, as saving "
            f"it would have been refused: {refused}",
        )
    else:
        messages.success(
            request,
            f"Kept the version on disk of {path}. Your edit is in its history, marked not "
            "kept: restore it from there if you change your mind.",
        )
    return redirect(_memory_url(store, path))


def _refuse_read_only(request: HttpRequest, store: Store, path: str) -> HttpResponse:
    messages.error(request, f"Not changed: {READ_ONLY}")
    return redirect(_memory_url(store, path))


def _deleted_meanwhile(request: HttpRequest, store_id: int, path: str) -> HttpResponse:
    """A save of a memory deleted while it was edited (by an agent on disk, or in another
    tab): the new-memory form holding what was typed, saying so. Nothing typed is lost."""
    store = get_store_for_user(request.user, store_id)
    typed = request.POST.copy()
    typed["base_sha256"] = typed["index_line"] = ""  # of the file that is gone
    form = MemoryForm(typed)
    form.is_valid()
    form.add_error(
        None,
        f"{path} was deleted while you edited it, so nothing was saved (its last version is in "
        "the Trash). What you typed is below: save it as a new memory, or restore the old one "
        "from the Trash.",
    )
    context = {"store": store, "form": form, "warnings": [], "preview": None}
    return render(request, "memapp/edit.html", context, status=409)


@login_required
def memory_edit(request: HttpRequest, store_id: int, path: str) -> HttpResponse:
    try:
        store, file = get_memory_for_user(request.user, store_id, path)
        data = _read(store, path)
    except (Http404, FileNotFoundError):
        if request.method == "POST":
            return _deleted_meanwhile(request, store_id, path)
        raise Http404("No such memory.") from None
    if store.read_only:
        return _refuse_read_only(request, store, path)
    if "\\" in path:
        messages.error(request, f"{path} cannot be edited. {ODD_NAME}")
        return redirect(_memory_url(store, path))
    # Opening the form only: a save from a form opened before the file grew is the person's
    # text, written as any other (the large bytes stay in the history).
    if request.method == "GET" and (too_large := _too_large(data)):
        messages.error(request, f"{path} cannot be edited. {too_large}")
        return redirect(_memory_url(store, path))
    if request.method == "POST" and "keep_disk" in request.POST:
        return _keep_disk(request, store, path, data)
    warnings: list[str] = []
    preview = None
    memory = parse_memory(data, path=path)
    odd = unknown_type(memory)
    if request.method == "POST":
        form = MemoryForm(request.POST, unknown_type=odd)
        if "preview" in request.POST:
            preview, warnings = _previewed(store, request)
        elif form.is_valid():
            response, warnings = _save(request, store, form, path)
            if response is not None:
                return response
    else:  # what the memory is warned of now, before a keystroke (and without JavaScript)
        warnings = _warnings(store, memory.type, memory.body, memory.description)
        form = MemoryForm(
            unknown_type=odd,
            initial={
                "name": memory.name or "",
                "description": memory.description or "",
                "type": memory.type or "",
                "body": memory.body,
                "index_line": _index_line(store, path, memory),
                "base_sha256": checksum(data),
            },
        )
    context = {
        "store": store,
        "file": file,
        "form": form,
        "warnings": warnings,
        "preview": preview,
        "unknown_type": unknown_type_warning(odd) if odd else "",
        "unread_header": _unread_header(data, memory),
    }
    return render(request, "memapp/edit.html", context)


@login_required
def memory_create(request: HttpRequest, store_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    warnings: list[str] = []
    preview = None
    if request.method == "POST":
        form = MemoryForm(request.POST)
        if "preview" in request.POST:
            preview, warnings = _previewed(store, request)
        elif form.is_valid():
            response, warnings = _save(request, store, form, None)
            if response is not None:
                return response
    else:
        form = MemoryForm(initial={"type": request.GET.get("type", "")})
    context = {"store": store, "form": form, "warnings": warnings, "preview": preview}
    return render(request, "memapp/edit.html", context)


def _previewed(store: Store, request: HttpRequest) -> tuple[str, list[str]]:
    """The Preview button without JavaScript: the body rendered and the warnings, nothing
    saved (the form comes back as typed)."""
    post = request.POST
    body = post.get("body", "")
    return _preview(store, body), _warnings(store, post.get("type"), body, post.get("description"))


@login_required
@require_POST
def memory_lint(request: HttpRequest, store_id: int) -> HttpResponse:
    """Live warnings for the edit form (htmx)."""
    store = get_store_for_user(request.user, store_id)
    post = request.POST
    warnings = _warnings(store, post.get("type"), post.get("body", ""), post.get("description", ""))
    return render(request, "memapp/partials/warnings.html", {"warnings": warnings})


@login_required
@require_POST
def memory_preview(request: HttpRequest, store_id: int) -> HttpResponse:
    """The body as the memory page will show it, while editing (htmx; the Preview button
    does the same through the edit view without JavaScript)."""
    store = get_store_for_user(request.user, store_id)
    preview = _preview(store, request.POST.get("body", ""))
    return render(request, "memapp/partials/preview.html", {"store": store, "preview": preview})


@login_required
def memory_forget(request: HttpRequest, store_id: int, path: str) -> HttpResponse:
    store, file = get_memory_for_user(request.user, store_id, path)
    if store.read_only:
        return _refuse_read_only(request, store, path)
    if request.method == "POST":
        do_forget_memory(store, request.user, path)
        item = store.trash.filter(path=path).first()
        messages.success(
            request,
            format_html(
                "Forgot {}: the file and its index line are gone. They wait in the trash for "
                "{} days. {}",
                path,
                settings.MEMHUB_TRASH_DAYS,
                undo_button(request, store, item) if item else "",
            ),
        )
        return redirect("store", store_id=store.pk)
    context = {"store": store, "file": file, "trash_days": settings.MEMHUB_TRASH_DAYS}
    return render(request, "memapp/forget.html", context)


@login_required
@require_POST
def memory_share(request: HttpRequest, store_id: int, path: str) -> HttpResponse:
    """Copy a private memory into the project's team store (through the push gate), once the
    person has seen what teammates will read."""
    store, file = get_memory_for_user(request.user, store_id, path)
    allow_user = request.POST.get("allow_user") == "yes"
    if request.POST.get("confirm") != "yes":
        return confirm_share(request, store, [path], allow_user, cancel=_memory_url(store, path))
    try:
        shared = do_share_memories(store, request.user, [path], allow_user=allow_user)
    except FileRejected as exc:
        messages.error(request, f"Not shared: {exc}")
        return redirect(_memory_url(store, path))
    team = team_store_for(request.user, store.project)
    target = shared[path]
    url = reverse("memory", kwargs={"store_id": team.pk, "path": target})
    messages.success(request, f"Shared with the team as {target}.")
    return redirect(url)
