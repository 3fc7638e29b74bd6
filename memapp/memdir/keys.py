"""Path security: validating memory keys and configured directory overrides (docs/design.md §4).

A *key* is the relative path of a file inside a store, as it arrives from a request, a git tree or
a snapshot. `validate_key` is the only way from a key to a path on disk: it either returns the
joined path, guaranteed inside the store root lexically and after resolving symlinks, or raises
`PathTraversalError` naming the rule that was broken. Nothing here touches the disk except
`lstat` and `realpath`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from urllib.parse import unquote

__all__ = [
    "INDEX_NAME",
    "RULES",
    "PathTraversalError",
    "check_key",
    "check_key_name",
    "check_new_keys",
    "new_key_problems",
    "fold_key",
    "memory_dir_override_problem",
    "normalize_key",
    "stored_keys",
    "validate_key",
    "validate_keys",
    "validate_memory_dir_override",
]

# Stable rule ids, each with the words used in error messages.
RULES: dict[str, str] = {
    "not-text": "a key must be text",
    "empty": "the key is empty",
    "nul-byte": "the key contains a NUL byte",
    "drive-or-unc": "the key has a Windows drive or UNC form",
    "absolute": "the key is an absolute path",
    "backslash": "the key contains a backslash",
    "encoded-traversal": "URL-decoding or NFKC normalisation turns the key into a path traversal",
    "dotdot": "the key has a '..' segment",
    "dot-segment": "the key has a '.' segment",
    "empty-segment": "the key has an empty segment ('//' or a trailing '/')",
    "name-too-long": "a segment of the key is over 255 bytes, longer than a file name can be",
    "invisible-character": "the key contains a bidirectional or invisible control character",
    "index-lookalike": "a name in the key looks like MEMORY.md but is not spelt MEMORY.md",
    "lookalike-duplicate": "the key, or a folder of it, differs from another of the store or "
    "the write only in case, width, Unicode form or trailing dots and spaces (macOS or Windows "
    "would see one)",
    "parent-is-file": "a folder of the key is a file",
    "key-is-folder": "the key names a folder, not a file",
    "outside-root": "the key resolves outside the store root",
    "symlink-escape": "a symlink takes the key outside the store root",
    "dangling-symlink": "the key goes through a dangling symlink",
    "symlink-loop": "the key goes through a symlink loop",
    "permission-denied": "the key's path cannot be inspected (permission denied)",
    "unresolvable": "the key's path cannot be resolved",
}

_DRIVE = re.compile(r"[A-Za-z]:")
# Unicode categories no file name needs and a reader cannot see: controls (Cc), format
# characters (Cf: the bidirectional overrides and isolates, zero-width spaces and joiners, BOM)
# and line or paragraph separators. `\u202edm.exe.md` shows as `dm.exe.md` read right to left.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
INDEX_NAME = "MEMORY.md"
_UNC_PREFIXES = ("\\\\", "//")
# Tokens that URL-decoding or NFKC must not introduce into a key.
_TRAVERSAL_TOKENS = ("..", "/", "\\", "\0")
# Fail closed on keys whose decoded forms do not settle quickly (nested encodings).
_MAX_DECODE_DEPTH = 8
_MAX_VARIANTS = 64
_MAX_QUOTED_KEY = 120
# NAME_MAX of Linux and macOS file systems: checked here, because a longer name is refused by
# the OS only where its folder exists, so a check on a path not yet made would pass it.
_MAX_SEGMENT_BYTES = 255


class PathTraversalError(ValueError):
    """A key (or a store root) failed a path-security rule; nothing may be read or written.

    `rule` is a stable id from `RULES`; `key` is the offending key, unchanged; `beside` the
    key or folder it would be one with (`lookalike-duplicate`), named in the message so a person
    can find both; `detail` is for logs only (it may name server paths) and is kept out of the
    message, which API responses may show.
    """

    def __init__(
        self, rule: str, key: object, detail: str = "", *, beside: str | None = None
    ) -> None:
        self.rule = rule
        self.key = key
        self.detail = detail
        self.beside = beside
        message = f"unsafe memory key {_shown(key)}: {RULES[rule]} [{rule}]"
        if beside is not None:
            message += f"; the other is {_shown(beside)}"
        super().__init__(message)


def _quote(key: object) -> str:
    """repr() of the key, shortened, so a message never carries raw control characters."""
    if isinstance(key, str) and len(key) > _MAX_QUOTED_KEY:
        return repr(key[:_MAX_QUOTED_KEY]) + "..."
    return repr(key)


def _shown(key: object) -> str:
    """:func:`_quote`, marked when not in NFC: `café.md` in NFC and in NFD print alike."""
    if isinstance(key, str) and not unicodedata.is_normalized("NFC", key):
        return f"{_quote(key)} (decomposed)"
    return _quote(key)


def _decoded_variants(key: str) -> set[str] | None:
    """Every form reachable from `key` by repeated URL-decoding and NFKC, or None if unbounded.

    Both orders matter: `％２ｆ` only becomes `/` through NFKC then URL-decoding, `%EF%BC%8F`
    (fullwidth solidus) only through URL-decoding then NFKC.
    """
    seen = {key}
    frontier = [key]
    for _ in range(_MAX_DECODE_DEPTH):
        new: list[str] = []
        for form in frontier:
            for nxt in (unquote(form), unicodedata.normalize("NFKC", form)):
                if nxt not in seen:
                    seen.add(nxt)
                    new.append(nxt)
        if not new:
            return seen
        if len(seen) > _MAX_VARIANTS:
            return None
        frontier = new
    return None


def _introduces_traversal(key: str) -> bool:
    variants = _decoded_variants(key)
    if variants is None:
        return True
    for form in variants:
        if any(form.count(tok) > key.count(tok) for tok in _TRAVERSAL_TOKENS):
            return True
        if _DRIVE.match(form) and not _DRIVE.match(key):
            return True
    return False


def _check_syntax(key: str) -> None:
    if key == "":
        raise PathTraversalError("empty", key)
    if "\0" in key:
        raise PathTraversalError("nul-byte", key)
    if _DRIVE.match(key) or key.startswith(_UNC_PREFIXES):
        raise PathTraversalError("drive-or-unc", key)
    if key.startswith("/"):
        raise PathTraversalError("absolute", key)
    if "\\" in key:
        raise PathTraversalError("backslash", key)
    if _introduces_traversal(key):
        raise PathTraversalError("encoded-traversal", key)
    segments = key.split("/")
    if ".." in segments:
        raise PathTraversalError("dotdot", key)
    if "." in segments:
        raise PathTraversalError("dot-segment", key)
    if "" in segments:
        raise PathTraversalError("empty-segment", key)
    if any(len(s.encode("utf-8", "surrogatepass")) > _MAX_SEGMENT_BYTES for s in segments):
        raise PathTraversalError("name-too-long", key)


def normalize_key(key: str) -> str:
    """The form a key is stored under: NFC, as macOS's NFD names and typed names agree on."""
    return unicodedata.normalize("NFC", key)


def fold_key(key: str) -> str:
    """What two keys share when a case- or width-insensitive file system (macOS, Windows) or a
    reader would take them for one file: NFKC (full-width `ｍ` is `m`, `é` in NFC or NFD is one
    character), then case folded, and each segment without trailing dots and spaces (Windows
    drops them: `sub.` and `sub ` are the folder `sub`)."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", key).casefold())
    return "/".join(segment.rstrip(". ") for segment in folded.split("/"))


def stored_keys(keys: Iterable[str], on_disk: Collection[str]) -> dict[str, str]:
    """Each of `keys` → the key it is written under: its own when a file on disk is spelt so,
    else its NFC form (`normalize_key`). `PathTraversalError` (`lookalike-duplicate`) when two
    of them would be written under one key (`café.md` sent in NFC and in NFD): one file's
    content would silently replace the other's."""
    stored: dict[str, str] = {}
    spelt: dict[str, str] = {}
    for key in keys:
        target = key if key in on_disk else normalize_key(key)
        other = spelt.setdefault(target, key)
        if other != key:
            raise PathTraversalError("lookalike-duplicate", key, beside=other)
        stored[key] = target
    return stored


_INDEX_FOLDED = fold_key(INDEX_NAME)


def check_key_name(key: str) -> None:
    """The rules a key must meet to be written (docs/design.md §4), on top of `check_key`'s:
    no character a reader cannot see (`invisible-character`) and no name that is MEMORY.md
    once folded without being spelt so (`index-lookalike`). A file already named so can still
    be read and removed, so a person can clean it up."""
    if any(unicodedata.category(char) in _INVISIBLE_CATEGORIES for char in key):
        raise PathTraversalError("invisible-character", key)
    if any(s != INDEX_NAME and fold_key(s) == _INDEX_FOLDED for s in key.split("/")):
        raise PathTraversalError("index-lookalike", key)


def check_new_keys(keys: Iterable[str], existing: Iterable[str]) -> None:
    """`PathTraversalError` when a key to be written would sit beside another as one file on
    macOS or Windows (`lookalike-duplicate`: `café.md` in NFC beside its NFD spelling,
    `Notes.md` beside `notes.md`), or a folder of it beside another folder (`SUB/y.md` beside
    `sub/x.md`, `sub./y.md` too), or a key's folder is another key (`parent-is-file`).
    `existing` are the store's keys that stay; `keys` the ones written (already NFC)."""
    problems = new_key_problems(keys, existing)
    if problems:
        raise next(iter(problems.values()))


def new_key_problems(keys: Iterable[str], existing: Iterable[str]) -> dict[str, PathTraversalError]:
    """Every key of `keys` that :func:`check_new_keys` refuses, with its error, in one pass:
    look-alikes first (of an existing key or folder, or of one earlier in `keys`), then keys
    whose folder is a file, each in the order of `keys`."""
    wanted = list(keys)
    kept = set(existing)
    taken: dict[str, str] = {fold_key(key): key for key in kept}
    folders = _Folders(kept)
    problems: dict[str, PathTraversalError] = {}
    for key in wanted:
        if key in kept:
            continue  # an existing file rewritten: its neighbours were there before
        other = taken.setdefault(fold_key(key), key)
        beside = other if other != key else folders.lookalike(key)
        if beside is not None:
            problems[key] = PathTraversalError("lookalike-duplicate", key, beside=beside)
    files = set(wanted) | kept
    for key in wanted:
        parts = key.split("/")
        if key not in problems and any(
            "/".join(parts[:depth]) in files for depth in range(1, len(parts))
        ):
            problems[key] = PathTraversalError("parent-is-file", key)
    return problems


class _Folders:
    """The folders keys lie in, by their folded spelling: a new folder must not be one with
    another on macOS or Windows. A folder that already holds a key is always fine: its files
    stay readable and writable, whatever its neighbours."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.spelt: set[str] = set()
        self.folded: dict[str, str] = {}
        for key in keys:
            self._add(key)

    def _add(self, key: str) -> None:
        for folder in _folders_of(key):
            self.spelt.add(folder)
            self.folded.setdefault(fold_key(folder), folder)

    def lookalike(self, key: str) -> str | None:
        """The existing folder a new folder of `key` would be one with; else None, and the
        key's folders count as existing for the keys after it."""
        for folder in _folders_of(key):
            other = self.folded.get(fold_key(folder), folder)
            if folder not in self.spelt and other != folder:
                return f"{other}/"
        self._add(key)
        return None


def _folders_of(key: str) -> list[str]:
    """`a/b/c.md` → `a`, `a/b`."""
    parts = key.split("/")
    return ["/".join(parts[:depth]) for depth in range(1, len(parts))]


def _is_inside(path: str, root: str) -> bool:
    """Strictly below `root`; the trailing separator keeps `/x/team-evil` out of `/x/team`."""
    return path.startswith(root if root.endswith(os.sep) else root + os.sep)


def _os_error_rule(exc: OSError) -> str:
    if exc.errno == errno.ENOENT:
        return "dangling-symlink"
    if exc.errno == errno.ELOOP:
        return "symlink-loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission-denied"
    return "unresolvable"


def _real_path(path: str, key: object) -> str:
    """The real path of `path`: its deepest existing ancestor with symlinks resolved, plus the
    components that do not exist yet. Any doubt (loop, dangling link, EACCES) raises."""
    existing = path
    missing: list[str] = []
    while True:
        try:
            os.lstat(existing)
            break
        except NotADirectoryError as exc:
            raise PathTraversalError("parent-is-file", key, str(exc)) from exc
        except FileNotFoundError:
            parent, name = os.path.split(existing)
            if parent == existing:  # pragma: no cover - "/" always exists
                break
            missing.append(name)
            existing = parent
        except OSError as exc:
            raise PathTraversalError(_os_error_rule(exc), key, str(exc)) from exc
    try:
        real = os.path.realpath(existing, strict=True)
    except OSError as exc:
        raise PathTraversalError(_os_error_rule(exc), key, str(exc)) from exc
    return str(Path(real, *reversed(missing)))


def check_key(key: object) -> None:
    """The rules of docs/design.md §4 that need no store: `PathTraversalError` for a key that
    is not text, is empty, absolute, has NUL, a backslash, a drive, a traversal (also once
    decoded), a `.` or empty segment, or a segment over 255 bytes. `validate_key` adds the
    checks against a root."""
    if not isinstance(key, str):
        raise PathTraversalError("not-text", key)
    _check_syntax(key)


def validate_key(root: str | os.PathLike[str], key: str) -> Path:
    """Check `key` against every rule of docs/design.md §4 and return `root / key`.

    The returned path is absolute and lexically inside `root` (symlinks are *not* resolved in
    it, so callers see the path they asked for), and its real path is inside the real root.
    Raises `PathTraversalError` (a `ValueError`) with a `rule` id from `RULES` otherwise:
    a `..` segment is refused even where it would resolve inside the root, and so are `.` and
    empty segments, because two spellings of one file would be two keys in the mirror.
    Symlinks inside the store that stay inside it are allowed; a dangling symlink, a symlink
    loop or a permission error on the way fails closed. The root itself need not exist yet.
    """
    found = validate_keys(root, [key])[key]
    if isinstance(found, PathTraversalError):
        raise found
    return found


def validate_keys(
    root: str | os.PathLike[str], keys: Iterable[str]
) -> dict[str, Path | PathTraversalError]:
    """:func:`validate_key` of each of `keys`: its path, or the error it raises. The root and
    each directory are resolved once, not once per key (a pull writing a thousand files)."""
    abs_root = os.path.normpath(Path(root).absolute())
    real_root: str | None = None
    real_dirs: dict[str, str] = {}
    found: dict[str, Path | PathTraversalError] = {}
    for key in keys:
        try:
            check_key(key)
            joined = os.path.normpath(Path(abs_root, key))
            if not _is_inside(joined, abs_root):
                raise PathTraversalError("outside-root", key)
            if real_root is None:
                real_root = _real_path(abs_root, key)
            real = _real_path_in(joined, key, real_dirs)
            if not _is_inside(real, real_root):
                raise PathTraversalError("symlink-escape", key, f"real path {real!r}")
            found[key] = Path(joined)
        except PathTraversalError as exc:
            found[key] = exc
    return found


def _real_path_in(path: str, key: object, real_dirs: dict[str, str]) -> str:
    """:func:`_real_path` of `path`, its directory's taken from (and left in) `real_dirs`: the
    same answer while `path` itself is no symlink (or missing), else resolved whole."""
    directory, name = os.path.split(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    except OSError:
        return _real_path(path, key)  # raises what it is (a parent that is a file, a loop…)
    else:
        if stat.S_ISLNK(st.st_mode):
            return _real_path(path, key)
    if directory not in real_dirs:
        real_dirs[directory] = _real_path(directory, key)
    return str(Path(real_dirs[directory], name))


def _home_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$HOME` from `env` (or `os.environ`); without one, the account's home from the password
    database, as `os.path.expanduser` does. Never mixes `env` with `os.environ`."""
    environ = os.environ if env is None else env
    home = environ.get("HOME")
    if home:
        return Path(home)
    try:
        import pwd

        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):  # pragma: no cover - non-POSIX or no passwd entry
        return Path.home()


def _check_override(
    raw: object, env: Mapping[str, str] | None, expand_tilde: bool
) -> tuple[Path | None, str | None]:
    if not isinstance(raw, str) or raw == "":
        return None, "empty or not text"
    if "\0" in raw:
        return None, "contains a NUL byte"
    candidate = raw
    home = os.path.normpath(_home_dir(env))
    if expand_tilde and raw in ("~", "~/"):
        return None, "'~' would be the home directory itself"
    if expand_tilde and raw.startswith("~/"):
        # Concatenate, as Node's path.join does: "~//etc" is inside home, not "/etc".
        candidate = home + "/" + raw[2:]
    if _DRIVE.match(candidate) or candidate.startswith(_UNC_PREFIXES):
        return None, "a Windows drive or UNC path"
    if not Path(candidate).is_absolute():
        return None, "not an absolute path"
    normalized = os.path.normpath(candidate)
    if len(normalized) < 3:
        return None, "shorter than 3 characters"
    if home == normalized or _is_inside(home, normalized):
        return None, "the home directory itself or one of its parents"
    return Path(unicodedata.normalize("NFC", normalized)), None


def memory_dir_override_problem(
    raw: object, env: Mapping[str, str] | None = None, *, expand_tilde: bool = True
) -> str | None:
    """Why `validate_memory_dir_override` refuses `raw`, in words; None when it is accepted."""
    return _check_override(raw, env, expand_tilde)[1]


def validate_memory_dir_override(
    raw: object, env: Mapping[str, str] | None = None, *, expand_tilde: bool = True
) -> Path | None:
    """A configured memory directory, normalised, or None when it must be ignored
    (docs/design.md §4).

    Accepted: an absolute path of at least 3 characters (after lexical normalisation), with no
    NUL, that is not a drive root, not UNC (`//server`, `\\\\server`), and neither the home
    directory nor one of its ancestors. `~/rest` is expanded against `$HOME` of `env` when
    `expand_tilde` (settings files); environment overrides pass `expand_tilde=False`, as the
    client does. The result is NFC-normalised like the client's, symlinks unresolved.
    Use `memory_dir_override_problem` for the reason of a refusal.
    """
    return _check_override(raw, env, expand_tilde)[0]
