"""One identity per project (docs/design.md §1): its repo slug, with every other name it is
known by (Claude Code's directory names, old keys) kept as an alias that resolves to it.

Staff change a project's slug and aliases on its page; two projects that turn out to be one are
merged, their stores, members, history and sessions moved into one, nothing deleted.
"""

from __future__ import annotations

from pathlib import Path

from django.db import IntegrityError, transaction

from memapp.memdir.store_files import INDEX_FILENAME, read_store
from memapp.stores.actions import do_put_files, free_path
from memapp.stores.events import record_event
from memapp.stores.models import Project, ProjectAlias, Store, Via
from memapp.stores.projects import DIRNAME_RE, REPO_SLUG_RE, canonical_ref, projects_named


class IdentityError(ValueError):
    """A slug or alias that cannot be set; the message says why, for a person."""


def _holder(name: str, *, besides: Project) -> Project | None:
    """The other project already known by `name` (key, slug or alias, as agents' lookups
    match it: a slug in any case), if any."""
    return projects_named(name).exclude(pk=besides.pk).first()


def check_slug(slug: str) -> str:
    slug = canonical_ref(slug.strip())
    if not REPO_SLUG_RE.fullmatch(slug):
        raise IdentityError(
            f"{slug!r} is not a repo slug: write it as owner/repo (e.g. acme/payments), "
            "as in the checkout's git remote."
        )
    return slug


def check_alias(name: str, project: Project) -> str:
    name = canonical_ref(name.strip())
    if not (REPO_SLUG_RE.fullmatch(name) or DIRNAME_RE.fullmatch(name)) or len(name) > 255:
        raise IdentityError(
            f"{name!r} is not a project name: an alias is an owner/repo slug or a Claude Code "
            "directory name (letters, digits and dashes, e.g. -home-ana-payments)."
        )
    other = _holder(name, besides=project)
    if other is not None:
        raise IdentityError(
            f"{name} already names the project {other}: an alias points at one project only "
            "(merge the two projects if they are one)."
        )
    return name


@transaction.atomic
def do_set_project_slug(project: Project, slug: str, by) -> bool:
    """Make `slug` the project's identity; its old key stays as an alias. False if unchanged.

    The team folder follows the slug: the next team sync moves it in the shared repository
    (docs/design.md §17)."""
    slug = check_slug(slug)
    if slug == project.key == project.repo_slug:
        return False
    other = _holder(slug, besides=project)
    if other is not None:
        raise IdentityError(
            f"{slug} is already the project {other}: merge the two projects if they are one."
        )
    old = project.key
    if old != slug:
        ProjectAlias.objects.get_or_create(name=old, defaults={"project": project})
    if project.repo_slug and project.repo_slug not in (old, slug):
        ProjectAlias.objects.get_or_create(name=project.repo_slug, defaults={"project": project})
    project.aliases.filter(name=slug).delete()
    project.key = project.repo_slug = slug
    project.save(update_fields=["key", "repo_slug"])
    record_event("project_renamed", project=project, user=by, old=old, new=slug)
    return True


@transaction.atomic
def do_set_project_aliases(project: Project, names: list[str], by) -> list[str]:
    """Replace the project's aliases with `names` (each checked first; nothing changes unless
    all pass). Returns the aliases kept."""
    wanted = []
    for name in names:
        if name.strip() and name.strip() not in wanted:
            wanted.append(check_alias(name, project))
    wanted = [name for name in wanted if name != project.key]
    current = set(project.aliases.values_list("name", flat=True))
    if current == set(wanted):
        return wanted
    project.aliases.exclude(name__in=wanted).delete()
    for name in wanted:
        ProjectAlias.objects.get_or_create(name=name, project=project)
    record_event(
        "project_renamed",
        project=project,
        user=by,
        old=project.key,
        new=project.key,
        aliases=wanted,
    )
    return wanted


def _same_store(store: Store, project: Project) -> Store | None:
    """The store of `project` that `store` would duplicate (one team store per mount, one
    private store per owner, one agent store per owner and agent)."""
    same = project.stores.filter(kind=store.kind, mount=store.mount)
    if store.kind != Store.Kind.TEAM:
        same = same.filter(owner=store.owner, agent_type=store.agent_type)
    return same.first()


def _merged_index(keeper: bytes | None, other: bytes, renamed: dict[str, str]) -> str:
    """The keeper's index with every line of the other's it lacks appended (a link to a file
    that had to be renamed points at its new name)."""
    lines = (keeper or b"").decode("utf-8", "replace").splitlines()
    for line in other.decode("utf-8", "replace").splitlines():
        for old, new in renamed.items():
            line = line.replace(f"]({old})", f"]({new})")
        if line.strip() and line not in lines:
            lines.append(line)
    return "\n".join(lines) + "\n"


def _move_files(loser: Store, keeper: Store, by) -> None:
    """Copy every file of `loser` into `keeper`: identical files once, a file both have with
    different text under a free name beside it, and the index lines merged."""
    theirs = read_store(Path(loser.path), tuple(loser.exclude))
    ours = read_store(Path(keeper.path), tuple(keeper.exclude))
    files: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for key, data in sorted(theirs.items()):
        if key == INDEX_FILENAME or ours.get(key) == data:
            continue
        target = key
        if key in ours:
            target = free_path(Path(keeper.path), key, f"from-{loser.project_id}")
            renamed[key] = target
        files[target] = data.decode("utf-8", "replace")
    if INDEX_FILENAME in theirs:
        merged = _merged_index(ours.get(INDEX_FILENAME), theirs[INDEX_FILENAME], renamed)
        if merged.encode("utf-8") != ours.get(INDEX_FILENAME):
            files[INDEX_FILENAME] = merged
    if files:
        note = f"merged in from project {loser.project}"
        do_put_files(keeper, by, files, via=Via.UI, note=note)


def _repoint(loser: Store, keeper: Store, *, losers_state: bool) -> None:
    """Everything recorded about `loser` (history, trash, proposals, sessions…) now about
    `keeper`; bookkeeping the keeper already has for the same key stays the keeper's.

    Per-store state (team sync's base and folder, the consolidation clock) is the loser's when
    `losers_state`: the store that was already the merged project's keeps its team folder."""
    for relation in Store._meta.related_objects:
        model, field = relation.related_model, relation.field.name
        rows = model._default_manager.filter(**{field: loser})
        if relation.one_to_one:
            if losers_state and rows.exists():
                model._default_manager.filter(**{field: keeper}).delete()
                rows.update(**{field: keeper})
            else:
                rows.delete()
            continue
        try:
            with transaction.atomic():
                rows.update(**{field: keeper})
        except IntegrityError:
            for row in rows:
                try:
                    with transaction.atomic():
                        model._default_manager.filter(pk=row.pk).update(**{field: keeper})
                except IntegrityError:
                    row.delete()  # the keeper's own row for the same key stands


@transaction.atomic
def do_merge_projects(source: Project, target: Project, by) -> Project:
    """Merge `source` into `target`: members, stores (a store both have is merged file by file,
    nothing lost), sessions, checkouts, flags and every name of `source` as an alias."""
    if source.pk == target.pk:
        raise IdentityError("A project cannot be merged into itself.")
    if source.repo_slug and target.repo_slug and source.repo_slug != target.repo_slug:
        raise IdentityError(
            f"{source} and {target} are two repositories ({source.repo_slug}, "
            f"{target.repo_slug}): only projects that are one repository can be merged."
        )
    target.members.add(*source.members.all())
    for store in list(source.stores.order_by("pk")):
        twin = _same_store(store, target)
        if twin is None:
            store.project = target
            store.save(update_fields=["project"])
            continue
        discovered = Store.Origin.DISCOVERED
        if store.origin == discovered and twin.origin == discovered:
            raise IdentityError(
                f"Both projects have a {store.get_kind_display()} directory on this host "
                f"({twin.path} and {store.path}): move one checkout's memory first."
            )
        # The directory an agent on this host writes to stays; the other's files move into it.
        keeper, loser = (store, twin) if store.origin == discovered else (twin, store)
        if keeper is store:
            store.project = target
            store.save(update_fields=["project"])
        _move_files(loser, keeper, by)
        _repoint(loser, keeper, losers_state=loser is twin)
        loser.delete()
    for relation in Project._meta.related_objects:
        if relation.related_model in (Store, ProjectAlias) or relation.many_to_many:
            continue
        rows = relation.related_model._default_manager.filter(**{relation.field.name: source})
        try:
            with transaction.atomic():
                rows.update(**{relation.field.name: target})
        except IntegrityError:  # a flag both override: the target's value stands
            rows.delete()
    names = {source.key, source.repo_slug, *source.aliases.values_list("name", flat=True)}
    source.aliases.all().delete()
    merged = source.key
    source.delete()
    for name in sorted(names - {"", target.key}):
        ProjectAlias.objects.get_or_create(name=name, defaults={"project": target})
    if not target.repo_slug and REPO_SLUG_RE.fullmatch(merged):
        do_set_project_slug(target, merged, by)
    record_event("projects_merged", project=target, user=by, merged=merged, into=target.key)
    return target
