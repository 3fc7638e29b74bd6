"""Where memory directories are, computed exactly as the coding agent does (docs/design.md §3, §13).

Every function that reads the environment takes an optional `env` mapping; when given it
replaces `os.environ` entirely, including `$HOME` for `~` (without `HOME` in it, the account's
home from the password database is used, never `os.environ`). Git repositories are inspected by
reading files under `.git`; no `git` process is started.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from memapp.memdir.keys import _home_dir, validate_memory_dir_override

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

__all__ = [
    "LOCAL_SETTINGS_FILENAME",
    "MANAGED_SETTINGS_PATH",
    "MAX_SANITIZED_LENGTH",
    "SETTINGS_FILENAME",
    "AgentScope",
    "agent_memory_dir",
    "auto_dream_enabled",
    "auto_memory_enabled",
    "canonical_git_root",
    "checkout_root",
    "config_home",
    "git_config_values",
    "js_string_hash",
    "load_user_settings",
    "local_settings_path",
    "long_name_prefix",
    "memory_base",
    "memory_dir_for",
    "original_path",
    "parse_repo_slug",
    "repo_slug_for",
    "sanitize_path",
]

MAX_SANITIZED_LENGTH = 200
SETTINGS_FILENAME = "settings.json"
LOCAL_SETTINGS_FILENAME = "settings.local.json"
# Policy (managed) settings: an administrator's file that outranks the user's settings.
MANAGED_SETTINGS_PATH = (
    Path("/Library/Application Support/ClaudeCode/managed-settings.json")
    if sys.platform == "darwin"
    else Path("/etc/claude-code/managed-settings.json")
)

_TRUTHY = frozenset({"1", "true", "yes", "on"})
_FALSY = frozenset({"0", "false", "no", "off"})
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

if TYPE_CHECKING:
    AgentScope = Literal["user", "project", "local"]
else:
    AgentScope = str  # one of those three; `typing` is not loaded for a hook


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def config_home(env: Mapping[str, str] | None = None) -> Path:
    """`$CLAUDE_CONFIG_DIR`, else `~/.claude`. An empty variable counts as unset."""
    configured = _environ(env).get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured)
    return _home_dir(env) / ".claude"


def memory_base(env: Mapping[str, str] | None = None) -> Path:
    """`$CLAUDE_CODE_REMOTE_MEMORY_DIR`, else the config home. An empty variable counts as unset."""
    remote = _environ(env).get("CLAUDE_CODE_REMOTE_MEMORY_DIR")
    if remote:
        return Path(remote)
    return config_home(env)


# --- sanitizing -----------------------------------------------------------------------------


def _utf16_units(text: str) -> list[int]:
    """UTF-16 code units as JavaScript sees them; a lone surrogate (from `surrogateescape`
    file names) is one unit, as in a JS string."""
    units: list[int] = []
    for char in text:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            units.append(0xD800 + (code >> 10))
            units.append(0xDC00 + (code & 0x3FF))
        else:
            units.append(code)
    return units


def js_string_hash(text: str) -> int:
    """The client's "djb2Hash": `h = (h << 5) - h + unit | 0` over UTF-16 units, from 0.

    The result is a signed 32-bit integer, as in JavaScript.
    """
    h = 0
    for unit in _utf16_units(text):
        h = (h * 31 + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h >= 0x80000000 else h


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, rest = divmod(number, 36)
        digits = _BASE36[rest] + digits
        if number == 0:
            return digits


def sanitize_path(path: str) -> str:
    """The directory name the client uses for a project path under `projects/`.

    Every UTF-16 code unit outside `[A-Za-z0-9]` becomes `-`, so a character outside the BMP
    becomes `--`. The sanitized form is pure ASCII, so its length in code units and in Python
    characters agree: over 200, it is cut to 200 and `-` plus the base-36 `abs()` of the hash
    of the *original* path is appended. Builds on another JS runtime hash differently; match
    their directories by `long_name_prefix`.

    >>> sanitize_path("/home/ana/my-app")
    '-home-ana-my-app'
    """
    sanitized = "".join(
        ("-" * (2 if ord(char) > 0xFFFF else 1)) if char not in _ALNUM else char for char in path
    )
    if len(sanitized) <= MAX_SANITIZED_LENGTH:
        return sanitized
    return f"{sanitized[:MAX_SANITIZED_LENGTH]}-{_base36(abs(js_string_hash(path)))}"


def long_name_prefix(path: str) -> str | None:
    """For a path whose sanitized name is hashed, the `<first 200>-` prefix every client build
    shares; None when the name is not hashed (then it must match exactly)."""
    sanitized = sanitize_path(path)
    if len(sanitized) <= MAX_SANITIZED_LENGTH:
        return None
    return sanitized[: MAX_SANITIZED_LENGTH + 1]


def original_path(
    dirname: str, root: str | os.PathLike[str] = "/", limit: int = 2000
) -> Path | None:
    """The existing directory whose sanitized path is `dirname`, found by walking down from
    `root` (sanitizing loses `/`, `.` and `-` alike, so only the disk can tell them apart).

    For showing a discovered project by its path or repository rather than by its directory
    name. None when no such directory exists any more, when the name is hashed (over 200
    characters), or after `limit` directories have been looked at.

    >>> original_path("-no-such-dir-anywhere") is None
    True
    """
    if len(dirname) > MAX_SANITIZED_LENGTH:
        return None
    looked = 0

    def walk(directory: Path, rest: str) -> Path | None:
        nonlocal looked
        if not rest:
            return directory
        looked += 1
        if looked > limit:
            return None
        try:
            entries = sorted(e.name for e in os.scandir(directory) if e.is_dir())
        except OSError:
            return None
        for name in entries:
            piece = "-" + sanitize_path(name)
            if rest.startswith(piece) and (found := walk(directory / name, rest[len(piece) :])):
                return found
        return None

    start = Path(root)
    prefix = sanitize_path(str(start).rstrip("/"))
    if not dirname.startswith(prefix):
        return None
    found = walk(start, dirname[len(prefix) :])
    return found if found is not None and sanitize_path(str(found)) == dirname else None


# --- git ------------------------------------------------------------------------------------


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError):
        return None


def _lexical(path: str | os.PathLike[str]) -> Path:
    """Absolute, with `.` and `..` collapsed lexically (symlinks untouched, like Node's
    `path.resolve`)."""
    return Path(os.path.normpath(Path(path).absolute()))


def _find_git_root(start: str | os.PathLike[str]) -> Path | None:
    """The nearest directory at or above `start` holding a `.git` directory or file."""
    current = _lexical(start)
    for candidate in (current, *current.parents):
        marker = candidate / ".git"
        if marker.is_dir() or marker.is_file():
            return candidate
    return None


def _gitdir_from_file(root: Path) -> Path | None:
    """The directory a `.git` *file* (`gitdir: …`) points to, or None for a `.git` directory."""
    content = _read_text(root / ".git")
    if content is None or not content.strip().startswith("gitdir:"):
        return None
    return _lexical(root / content.strip()[len("gitdir:") :].strip())


def _common_dir(gitdir: Path) -> Path | None:
    """A linked worktree's shared git directory, from its `commondir` file."""
    content = _read_text(gitdir / "commondir")
    if content is None or not content.strip():
        return None
    return _lexical(gitdir / content.strip())


def _canonical_root(root: Path) -> Path:
    gitdir = _gitdir_from_file(root)
    if gitdir is None:
        return root
    common = _common_dir(gitdir)
    if common is None:  # a submodule: its own root
        return root
    # The .git file and commondir are repository content. Accept only the layout that
    # `git worktree add` creates: the worktree's gitdir is `<common>/worktrees/<name>` and its
    # `gitdir` file points back to this checkout's `.git`. Otherwise a downloaded repo could
    # borrow the memory of any other project on the machine.
    if gitdir.parent != common / "worktrees":
        return root
    backlink = _read_text(gitdir / "gitdir")
    if backlink is None or not backlink.strip():
        return root
    try:
        linked = Path(backlink.strip()).resolve(strict=True)
        own = root.resolve(strict=True) / ".git"
    except (OSError, RuntimeError):
        return root
    if linked != own:
        return root
    if common.name != ".git":  # worktree of a bare repository
        return common
    return common.parent


def checkout_root(path: str | os.PathLike[str]) -> Path | None:
    """The top of the checkout containing `path` (a linked worktree's own top, not its main
    repository's), or None outside any repository."""
    return _find_git_root(path)


def canonical_git_root(path: str | os.PathLike[str]) -> Path | None:
    """The root of the git repository containing `path`, with linked worktrees resolved to
    their main repository (so all worktrees share one memory dir); None outside any repo.

    A worktree of a bare repository resolves to the bare repository's directory. A `.git` file
    that does not have the exact layout `git worktree add` writes (including submodules) keeps
    its own root. Paths are not symlink-resolved; the result is NFC-normalised, like the
    client's.
    """
    root = _find_git_root(path)
    if root is None:
        return None
    return Path(unicodedata.normalize("NFC", str(_canonical_root(root))))


def _config_path(path: str | os.PathLike[str]) -> Path | None:
    """The `config` file of the repository containing `path` (shared by all its worktrees)."""
    root = _find_git_root(path)
    if root is None:
        return None
    gitdir = _gitdir_from_file(root) or root / ".git"
    common = _common_dir(gitdir) or gitdir
    return common / "config"


_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\]')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$")
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


def _config_value(raw: str) -> tuple[str, bool]:
    """Unquote a git config value; return it and whether it continues on the next line."""
    out: list[str] = []
    quoted = False
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\\":
            if index + 1 == len(raw):
                return "".join(out), True
            out.append(_ESCAPES.get(raw[index + 1], raw[index + 1]))
            index += 2
            continue
        if char == '"':
            quoted = not quoted
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        index += 1
    return "".join(out), False


def git_config_values(text: str, section: str, subsection: str | None, key: str) -> list[str]:
    """Every value of `section "subsection".key` in git config `text`, in file order.

    Enough of git's format for remotes: section and key names are case-insensitive,
    subsections case-sensitive (the legacy `[section.sub]` form is lower-cased), values may be
    quoted, escaped, commented and continued with a trailing backslash. Includes and
    `insteadOf` rewriting are not followed.
    """
    values: list[str] = []
    current: tuple[str, str | None] | None = None
    wanted = (section.lower(), subsection)
    lines = iter(text.splitlines())
    for line in lines:
        match = _SECTION.match(line)
        if match:
            name, sub = match.group(1), match.group(2)
            if sub is not None:
                sub = re.sub(r"\\(.)", r"\1", sub)
            elif "." in name:
                name, sub = name.split(".", 1)
                sub = sub.lower()
            current = (name.lower(), sub)
            line = line[match.end() :]
        if current != wanted:
            continue
        found = _KEY.match(line)
        if not found or found.group(1).lower() != key.lower():
            continue
        raw = found.group(2)
        if raw is None:  # `key` alone means true
            values.append("true")
            continue
        value, continued = _config_value(raw.strip())
        while continued:
            nxt = next(lines, None)
            if nxt is None:
                break
            more, continued = _config_value(nxt)
            value += more
        values.append(value.strip())
    return values


def repo_slug_for(path: str | os.PathLike[str]) -> str | None:
    """`owner/repo` from `remote.origin.url` of the repository containing `path`, else None.

    Reads the repository's config file (for a linked worktree, the main repository's); the last
    `url` wins, as with `git config --get`.
    """
    config = _config_path(path)
    if config is None:
        return None
    text = _read_text(config)
    if text is None:
        return None
    urls = git_config_values(text, "remote", "origin", "url")
    return parse_repo_slug(urls[-1]) if urls else None


# The client's patterns, except that no part may hold whitespace (a slug is one clean token).
_SCP_REMOTE = re.compile(r"git@([^:\s]+):([^/\s]+)/([^/\s]+?)(?:\.git)?")
_URL_REMOTE = re.compile(
    r"(?:https?|ssh|git)://(?:[^@\s]+@)?([^/:\s]+)(?::[0-9]+)?/([^/\s]+)/([^/\s]+?)(?:\.git)?"
)
_TLD = re.compile(r"[A-Za-z]+")


def _looks_like_hostname(host: str) -> bool:
    return "." in host and _TLD.fullmatch(host.rsplit(".", 1)[1]) is not None


def parse_repo_slug(remote_url: str) -> str | None:
    """`owner/repo` from a git remote URL, or None when it has not exactly that shape.

    Accepted: `git@host:owner/repo(.git)` and `(https|http|ssh|git)://[user@]host[:port]/owner/
    repo(.git)`; `.git` is stripped, case kept. The host must contain a dot and end in an
    all-letter label, so `localhost`, `host.123` and IP addresses give None. Stricter than the
    client only in refusing whitespace inside the URL.
    """
    text = remote_url.strip()
    match = _SCP_REMOTE.fullmatch(text) or _URL_REMOTE.fullmatch(text)
    if match is None or not _looks_like_hostname(match.group(1)):
        return None
    return f"{match.group(2)}/{match.group(3)}"


# --- settings and the memory dir --------------------------------------------------------------


def _read_settings_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _git_index_paths(index: bytes) -> set[bytes] | None:
    """The paths git's index (`.git/index`, versions 2 to 4) tracks; None when it cannot be
    read as one."""
    if index[:4] != b"DIRC":
        return None
    version = int.from_bytes(index[4:8], "big")
    count = int.from_bytes(index[8:12], "big")
    if version not in (2, 3, 4):
        return None
    paths: set[bytes] = set()
    position, previous = 12, b""
    try:
        for _ in range(count):
            flags = int.from_bytes(index[position + 60 : position + 62], "big")
            start = position + 62 + (2 if version >= 3 and flags & 0x4000 else 0)
            if version == 4:  # the path shares a prefix with the previous one
                byte = index[start]
                strip, start = byte & 0x7F, start + 1
                while byte & 0x80:
                    byte = index[start]
                    strip, start = ((strip + 1) << 7) | (byte & 0x7F), start + 1
                end = index.index(b"\0", start)
                path = previous[: len(previous) - strip] + index[start:end]
                position = end + 1
            else:  # NUL-padded to a multiple of 8 bytes
                end = index.index(b"\0", start)
                path = index[start:end]
                position += (end - position + 8) & ~7
            paths.add(path)
            previous = path
    except (IndexError, ValueError):
        return None
    return paths


def _git_tracks(root: Path, relative: str) -> bool:
    """Whether the checkout at `root` tracks `relative` (read from its index, no `git`
    process). Fails closed: an index that cannot be read counts as tracking it."""
    gitdir = _gitdir_from_file(root) or root / ".git"
    try:
        index = (gitdir / "index").read_bytes()
    except FileNotFoundError:
        return False  # nothing staged or committed yet
    except OSError:
        return True
    paths = _git_index_paths(index)
    return paths is None or relative.encode("utf-8", "surrogateescape") in paths


def local_settings_path(project_dir: str | os.PathLike[str]) -> Path | None:
    """The checkout's own `.claude/settings.local.json`, when it is the person's file: present,
    neither it nor its `.claude` folder a symlink, and not tracked by git. A file the
    repository ships is committed settings, which may never redirect memory (docs/design.md
    §3); outside a git checkout (a downloaded folder) nobody can tell, so none is read. The
    file is looked for at the top of the checkout that contains `project_dir`."""
    root = checkout_root(project_dir)
    if root is None:  # a downloaded folder: nothing says who wrote its files
        return None
    folder = root / ".claude"
    path = folder / LOCAL_SETTINGS_FILENAME
    try:
        if folder.is_symlink() or path.is_symlink() or not path.is_file():
            return None
    except OSError:
        return None
    if _git_tracks(root, f".claude/{LOCAL_SETTINGS_FILENAME}"):
        return None
    return path


def load_user_settings(
    env: Mapping[str, str] | None = None,
    *,
    project_dir: str | os.PathLike[str] | None = None,
    managed_settings: Path | None = None,
) -> dict[str, Any]:
    """The settings a person controls, top-level keys, later ones winning: their user settings
    (`<config home>/settings.json`), the checkout's local settings
    (`<project>/.claude/settings.local.json`, see `local_settings_path`) when `project_dir` is
    given, then policy settings (`managed_settings`, by default the platform's
    managed-settings.json).

    A missing, unreadable or malformed file counts as empty. The project's committed settings
    (`<project>/.claude/settings.json`) are never read: a cloned repository must not redirect
    memory writes, nor switch memory on against the person's choice.
    """
    settings = _read_settings_file(config_home(env) / SETTINGS_FILENAME)
    local = local_settings_path(project_dir) if project_dir is not None else None
    if local is not None:
        settings.update(_read_settings_file(local))
    policy = _read_settings_file(
        MANAGED_SETTINGS_PATH if managed_settings is None else managed_settings
    )
    settings.update(policy)
    return settings


def memory_dir_for(
    project_path: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Path:
    """The private memory dir of the project at `project_path`; first match wins:

    1. `$CLAUDE_COWORK_MEMORY_PATH_OVERRIDE` (validated, no `~` expansion);
    2. `autoMemoryDirectory` from `settings`, the settings a person controls (when None,
       `load_user_settings` with the checkout's local settings), validated with `~/`
       expanded;
    3. `<memory base>/projects/<sanitized canonical git root, or the path itself>/memory`.

    An invalid override is ignored and the next rule applies.
    """
    environ = _environ(env)
    override = validate_memory_dir_override(
        environ.get("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"), env, expand_tilde=False
    )
    if override is not None:
        return override
    if settings is None:
        settings = load_user_settings(env, project_dir=project_path)
    configured = validate_memory_dir_override(settings.get("autoMemoryDirectory"), env)
    if configured is not None:
        return configured
    project = _lexical(project_path)
    root = canonical_git_root(project)
    return memory_base(env) / "projects" / sanitize_path(str(root or project)) / "memory"


def _env_flag(value: str | None) -> bool | None:
    """True for a truthy value, False for a defined falsy one, None otherwise."""
    if value is None:
        return None
    word = value.strip().lower()
    if word in _TRUTHY:
        return True
    if word in _FALSY:
        return False
    return None


def auto_memory_enabled(
    env: Mapping[str, str] | None = None, settings: Mapping[str, Any] | None = None
) -> bool:
    """Whether auto memory is on (docs/design.md §3), as the agent decides it.

    `CLAUDE_CODE_DISABLE_AUTO_MEMORY` truthy (`1,true,yes,on`, any case, stripped) turns it
    off; a defined falsy value (`0,false,no,off`) forces it on, over everything below. Then a
    set (non-empty) `CLAUDE_CODE_SIMPLE`, whatever its value, turns it off; so does a remote
    session (`CLAUDE_CODE_REMOTE` set) given no memory directory (neither
    `CLAUDE_CODE_REMOTE_MEMORY_DIR` nor `CLAUDE_COWORK_MEMORY_PATH_OVERRIDE`); and so does the
    setting `autoMemoryEnabled` being the JSON boolean `false`. `settings` are the settings a
    person controls (`load_user_settings` when None).
    """
    environ = _environ(env)
    disable = _env_flag(environ.get("CLAUDE_CODE_DISABLE_AUTO_MEMORY"))
    if disable is not None:
        return not disable
    if environ.get("CLAUDE_CODE_SIMPLE"):
        return False
    remote_dir = environ.get("CLAUDE_CODE_REMOTE_MEMORY_DIR") or environ.get(
        "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"
    )
    if environ.get("CLAUDE_CODE_REMOTE") and not remote_dir:
        return False
    if settings is None:
        settings = load_user_settings(env)
    return settings.get("autoMemoryEnabled") is not False


def auto_dream_enabled(
    env: Mapping[str, str] | None = None, settings: Mapping[str, Any] | None = None
) -> bool:
    """Whether background consolidation ("dream") may run for this person: auto memory on and
    the setting `autoDreamEnabled` not the JSON boolean `false`."""
    if settings is None:
        settings = load_user_settings(env)
    return auto_memory_enabled(env, settings) and settings.get("autoDreamEnabled") is not False


def agent_memory_dir(
    agent_type: str,
    scope: AgentScope,
    env: Mapping[str, str] | None = None,
    repo: str | os.PathLike[str] | None = None,
) -> Path:
    """An agent's memory dir (docs/design.md §13); `:` in the agent type becomes `-`.

    `user`: `<memory base>/agent-memory/<agent>`; `project`: `<repo>/.claude/agent-memory/
    <agent>`; `local`: `<repo>/.claude/agent-memory-local/<agent>`. Raises ValueError for an
    unknown scope, a missing `repo` in the repo scopes, or an agent type that is not a single
    safe path segment.
    """
    name = agent_type.replace(":", "-")
    if name in ("", ".", "..") or any(char in name for char in "/\\\0"):
        raise ValueError(f"agent type {agent_type!r} is not a single path segment")
    if scope == "user":
        return memory_base(env) / "agent-memory" / name
    if scope not in ("project", "local"):
        raise ValueError(f"unknown agent memory scope {scope!r}")
    if repo is None:
        raise ValueError(f"agent memory scope {scope!r} needs the repository path")
    folder = "agent-memory" if scope == "project" else "agent-memory-local"
    return Path(repo) / ".claude" / folder / name
