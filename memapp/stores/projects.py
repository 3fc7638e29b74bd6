"""Finding a project and a user's store in it from what an agent knows (docs/design.md §1, §3)."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.http import Http404

from memapp.memdir.memory_dirs import PRIVATE_EXCLUDE
from memapp.memdir.paths import parse_repo_slug, sanitize_path
from memapp.stores.flags import get_flag
from memapp.stores.models import Project, ProjectAlias, Store
from memapp.stores.warm import remembered

# A repo slug names the project's folder in the shared team repository, so `..`, `.` and an
# owner starting with a dot (`.git/…`) would put it outside that repository or in its metadata.
REPO_SLUG_RE = re.compile(r"(?![.])[^/\\\s\x00-\x1f\x7f]+/(?!\.\.?$)[^/\\\s\x00-\x1f\x7f]+")
# A sanitized memory directory name (docs/design.md §3) is made of letters, digits and dashes only.
DIRNAME_RE = re.compile(r"[A-Za-z0-9-]+")


def valid_project_key(key: str) -> bool:
    """A repo slug `owner/repo`, or the sanitized name of a memory directory."""
    return bool(REPO_SLUG_RE.fullmatch(key) or DIRNAME_RE.fullmatch(key))


def canonical_ref(ref: str) -> str:
    """The name memhub keeps for a repository an agent or a person may spell several ways
    (docs/design.md §1): a git remote URL is its `owner/repo` (`git@github.com:acme/app.git`,
    `https://github.com/acme/app`, `ssh://…`), and a slug's `.git` is dropped (`acme/app.git`,
    `acme/app.GIT`), as git hosts serve a repository by both and name none with that ending.
    Any other name is kept as it is.

    Without it `acme/app.git` was a second project of the same repository, with a team folder
    of its own, which anyone allowed to create projects could make."""
    slug = parse_repo_slug(ref) or (ref if REPO_SLUG_RE.fullmatch(ref) else None)
    if slug is None:
        return ref
    owner, repo = slug.split("/")
    if repo[-4:].lower() == ".git" and repo[:-4] not in ("", ".", ".."):
        repo = repo[:-4]
    return f"{owner}/{repo}"


def _named(ref: str, prefix: str = "") -> Q:
    """A project's names: its key, its repo slug and its aliases (docs/design.md §1), `ref`
    read as `canonical_ref` reads it. A repo slug names its project in any case, as GitHub's
    do (`ACME/Widgets` is `acme/widgets`, and so is an old slug kept as an alias): matched
    exactly, a client spelling it otherwise made a second project, and a second folder in the
    shared team repository that macOS and Windows see as one. A directory name (an alias, or
    a key that is not a slug) is matched exactly, as Linux paths differ by case."""
    ref = canonical_ref(ref)
    return _called(ref, "iexact" if REPO_SLUG_RE.fullmatch(ref) else "exact", prefix)


def _called(name: str, match: str, prefix: str = "") -> Q:
    aliases = ProjectAlias.objects.filter(**{f"name__{match}": name})
    return (
        Q(**{f"{prefix}key__{match}": name})
        | Q(**{f"{prefix}repo_slug__{match}": name})
        | Q(**{f"{prefix}pk__in": aliases.values("project")})
    )


def projects_named(ref: str):
    """Every project `ref` is a name of (one, unless staff gave two the same name before
    names were compared this way), oldest first."""
    return Project.objects.filter(_named(ref)).order_by("pk")


def _named_with_git(ref: str) -> Project | None:
    """The project a repository's name with git's `.git` names (`acme/app.git`, in any
    case): one made under it before `canonical_ref` read it as `acme/app`, which no name
    would reach any more, and beside which an agent's next call would make a second."""
    ref = canonical_ref(ref)
    if not REPO_SLUG_RE.fullmatch(ref):
        return None
    return Project.objects.filter(_called(f"{ref}.git", "iexact")).order_by("pk").first()


def find_project(ref: str) -> Project | None:
    """By key (`owner/repo` or a sanitized directory name), repo slug or alias, however the
    repository is spelt (`canonical_ref`), else by the name with `.git` a project had before
    (after any project of the name itself); kept by a warm worker: memapp.stores.warm."""
    return remembered(("project", ref), lambda: projects_named(ref).first() or _named_with_git(ref))


# Whether a name is already taken outside memhub (a folder of the shared team repository):
# registered by teamsync, which the stores layer may not import.
_claimed_checks: list[Callable[[str], bool]] = []


def register_claimed(check: Callable[[str], bool]) -> None:
    _claimed_checks.append(check)


class NoProject(Http404):
    """No project `ref` the caller can reach: unknown, or one they are no member of (the API
    answers both alike, 404 `no_project` with `no_project_message`)."""

    def __init__(self, ref: str) -> None:
        super().__init__(no_project_message(ref))
        self.ref = ref


def no_project_message(ref: str) -> str:
    """What an agent is told when memhub has no project `ref` it may reach (the same for one
    that does not exist and one the caller is no member of, so nothing leaks)."""
    return (
        f"memhub has no project {ref} that you can reach: if it is there under another name, "
        "staff can give it this repo slug on its project page; if you are not one of its "
        "members, staff can add you."
    )


def valid_new_project_key(key: str) -> bool:
    """Whether a project may be made under `key`: a valid key (:func:`valid_project_key`) as
    :func:`canonical_ref` spells it (another spelling of a repository is never a project of
    its own), in ASCII as git hosts spell their names: `ａｃｍｅ/app` (full-width letters) or
    `аcme/app` (a Cyrillic а) would read as acme/app to a person choosing among projects."""
    return valid_project_key(key) and key.isascii() and canonical_ref(key) == key


def may_create_project(user, key: str) -> bool:
    """Whether `user` may create a project named `key` (`protocol_project_creation`, on every
    path that creates one). A name the shared team repository already holds is claimed only
    by staff: creating it would hand its team memory to whoever asked first."""
    if not user.is_authenticated or not valid_new_project_key(key):
        return False
    if user.is_staff:
        return True
    if get_flag("protocol_project_creation") != "everyone":
        return False
    return not any(check(key) for check in _claimed_checks)


def adopt_slug(project: Project, slug: str) -> None:
    """Make a project known by a directory name its repo slug `slug` (free: no other project
    has it), the old key kept as an alias; team sync then moves its folder (docs/design.md §17)."""
    project.aliases.filter(name=slug).delete()
    ProjectAlias.objects.get_or_create(name=project.key, defaults={"project": project})
    project.key = project.repo_slug = slug
    project.save(update_fields=["key", "repo_slug"])


def managed_store_dir(project: Project, scope: str, user=None):
    """Where memhub keeps a store uploaded by remote agents: inside its data dir. The project's
    id makes the name unique (`acme/app` and `acme-app` sanitize alike)."""
    base = settings.MEMHUB_DATA_DIR / "stores" / f"{project.pk}-{sanitize_path(project.key)}"
    return base / (f"private-{user.pk}" if scope == Store.Kind.PRIVATE else "team")


def resolve_store(
    user,
    project_ref: str,
    scope: str,
    *,
    alias: str = "",
    create: bool = True,
    new_project: bool = True,
):
    """Like `_resolve_store`, with a read-only fast path for the common case: the user's own
    private store of a known project (no write transaction, so no SQLite write lock); kept by
    a warm worker (memapp.stores.warm: making a store or a project replaces the stamp)."""
    project_ref = canonical_ref(project_ref)
    key = ("resolved-store", user.pk, project_ref, scope, alias, create, new_project)
    return remembered(
        key, lambda: _find_store(user, project_ref, scope, alias, create, new_project)
    )


def _find_store(user, project_ref: str, scope: str, alias: str, create: bool, new_project: bool):
    if scope == Store.Kind.PRIVATE and not alias:
        store = (
            Store.objects.filter(
                _named(project_ref, "project__"),
                kind=Store.Kind.PRIVATE,
                owner=user,
                agent_type="",  # not another agent's (Gemini CLI's) mirrored memory dir
            )
            .select_related("project")
            .order_by("pk")  # not Meta.ordering, which joins and sorts on every call
            .first()
        )
        if store is not None:
            return store
    return _resolve_store(
        user, project_ref, scope, alias=alias, create=create, new_project=new_project
    )


def reading_store(user, project_ref: str, *, alias: str = "", new_project: bool = True):
    """The user's private store of a project for a read (a prompt, recall, an MCP read): made
    only in a project the user belongs to, or in a new one when `new_project` (a token that may
    write, and a user who may create it). None when there is none the user can reach: an
    unknown project and a non-member's (who kept no store there from before) alike, so the
    answer tells nothing of which projects exist, and nothing is left in someone else's."""
    try:
        return resolve_store(user, project_ref, "private", alias=alias, new_project=new_project)
    except Http404:
        return None


@transaction.atomic
def _resolve_store(
    user,
    project_ref: str,
    scope: str,
    *,
    alias: str = "",
    create: bool = True,
    new_project: bool = True,
):
    """The user's private store, or the project's team store, for an agent's project.

    `alias` is the sanitized directory name the agent also knows; a project first discovered
    under it takes the slug as its identity (docs/design.md §1), but only for a member who
    may create a project of that name (and not for a read-scope token: `new_project` false). A
    team store needs membership (else 404, so nothing leaks); a private store is the user's own
    and is created on first use in a project the user belongs to, or one the user may create
    (`may_create_project`) unless `new_project` is false; a non-member keeps only a store made
    before. With `create` false nothing is written, not even that link: a missing store is a
    404.
    """
    project = find_project(project_ref) or (find_project(alias) if alias else None)
    linkable = (
        create
        and new_project
        and project is not None
        and alias
        and project.key == alias != project_ref
    )
    if (
        linkable
        and not project.repo_slug
        and REPO_SLUG_RE.fullmatch(project_ref)
        and project.members.filter(pk=user.pk).exists()
        and find_project(project_ref) is None
        and may_create_project(user, project_ref)
    ):
        adopt_slug(project, project_ref)
    if scope == Store.Kind.TEAM:
        if project is None or not project.members.filter(pk=user.pk).exists():
            raise NoProject(project_ref)
        store = project.stores.filter(kind=Store.Kind.TEAM, mount="").first()
        if store is None and create:
            path = managed_store_dir(project, scope)
            path.mkdir(parents=True, exist_ok=True)
            store = Store.objects.create(
                kind=Store.Kind.TEAM, origin=Store.Origin.MANAGED, path=str(path), project=project
            )
        if store is None:
            raise Http404("No team store.")
        return store
    if project is None:
        if not new_project or not may_create_project(user, project_ref):
            raise NoProject(project_ref)
        if not create:  # one the caller may create: a dry run's "not yet"
            raise Http404("No such project yet.")
        slug = project_ref if REPO_SLUG_RE.fullmatch(project_ref) else ""
        project = Project.objects.create(key=project_ref, repo_slug=slug)
        project.members.add(user)
    store = project.stores.filter(kind=Store.Kind.PRIVATE, owner=user, agent_type="").first()
    if store is None:
        # Nothing is made in someone else's project: a non-member is told what an unknown
        # project's caller is (one who kept a store from before still finds it above).
        if not project.members.filter(pk=user.pk).exists():
            raise NoProject(project_ref)
        if not create:
            raise Http404("No private store.")
        path = managed_store_dir(project, scope, user)
        path.mkdir(parents=True, exist_ok=True)
        store = Store.objects.create(
            kind=Store.Kind.PRIVATE,
            origin=Store.Origin.MANAGED,
            path=str(path),
            project=project,
            owner=user,
            exclude=list(PRIVATE_EXCLUDE),
        )
    return store
