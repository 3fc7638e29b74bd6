"""The secret gate before a push: the fast rules plus detect-secrets (docs/design.md §10a).

:func:`scan_for_push` takes the entries about to leave (key → text) and returns the ones that
must not, with each hit's rule, label and line, never the value. Hits from detect-secrets get
the rule id ``detect-secrets:<its secret type>`` (``detect-secrets:Secret Keyword``) and the
type as label. A detect-secrets hit on a line the fast rules already flagged is left out: the
person fixing the file sees one reason per line.

detect-secrets keeps its settings in one process-wide object that its own helpers
(``transient_settings``, ``default_settings``) swap in and out, so it is configured here once,
under a module lock, and every detect-secrets scan runs under the same lock. Nothing else in
memhub may touch detect-secrets' settings. The configuration is its keyword and provider
plugins; the entropy plugins (``Base64HighEntropyString``, ``HexHighEntropyString``) and the
public-IP plugin flag every quoted checksum in ordinary prose, so they only run when an admin
turns them on (``configure(entropy=True)``). Two of its default filters are dropped: the
``pragma: allowlist secret`` comment (anyone writing a memory could add it) and secret
verification (which would send a found secret to its provider to test it).

Each entry is scanned in memory as detect-secrets' ``scan_file`` scans a file of that name
(its file-type-aware keyword rules, its transformers, the eager config pass when the first pass
finds nothing), without the filename filters that skip whole files (``*swagger*``,
``package-lock.json``, ``*.css``): a memory is scanned whatever it is called. Results are cached
by content hash, so unchanged entries are never scanned twice.
"""

from __future__ import annotations

import io
import posixpath
import re
import threading
from collections.abc import Hashable, Mapping
from typing import TypeVar, cast

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.core.potential_secret import PotentialSecret

# The line-based scan behind detect-secrets' scan_file (1.5.0); public scan_file needs a path,
# and scan_line's eager mode floods prose with false positives.
from detect_secrets.core.scan import _process_line_based_plugins
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.keyword import KeywordDetector
from detect_secrets.settings import get_plugins, get_settings
from detect_secrets.transformers import get_transformed_file
from detect_secrets.types import NamedIO
from detect_secrets.util.code_snippet import get_code_snippet
from detect_secrets.util.filetype import FileType, determine_file_type

from memapp.memdir.secret_rules import SecretHit, SecretScanCache, redact_text, scan_text

__all__ = [
    "DETECT_SECRETS_PREFIX",
    "ENTROPY_PLUGINS",
    "configure",
    "redact_with_gate",
    "scan_for_push",
]

K = TypeVar("K", bound=Hashable)

DETECT_SECRETS_PREFIX = "detect-secrets:"
ENTROPY_PLUGINS = ("Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector")
_DROPPED_FILTERS = (
    "detect_secrets.filters.allowlist.is_line_allowlisted",
    "detect_secrets.filters.common.is_ignored_due_to_verification_policies",
)

_lock = threading.Lock()
_entropy: bool | None = None  # None until configured
_caches: dict[FileType, SecretScanCache] = {}


def _plugin_names(entropy: bool) -> set[str]:
    plugins: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = {plugin.__name__ for plugin in plugins}
    return names if entropy else names - set(ENTROPY_PLUGINS)


def _apply_settings(entropy: bool) -> None:
    global _patterns
    _patterns = ()
    settings = get_settings()
    settings.clear()
    settings.configure_plugins([{"name": name} for name in sorted(_plugin_names(entropy))])
    settings.disable_filters(*_DROPPED_FILTERS)


def _settings_intact(entropy: bool) -> bool:
    settings = get_settings()
    return set(settings.plugins) == _plugin_names(entropy) and not any(
        path in settings.filters for path in _DROPPED_FILTERS
    )


def configure(*, entropy: bool = False) -> None:
    """Set detect-secrets up for the gate; call once at start-up with the admin's flag.

    Calling it again with the same value does nothing; with another value it reconfigures
    (under the lock, so no scan sees a half-made configuration) and forgets cached results.
    The first scan configures with the default (no entropy plugins) if this was never called.
    """
    global _entropy
    with _lock:
        if _entropy == entropy and _settings_intact(entropy):
            return
        _apply_settings(entropy)
        if _entropy != entropy:
            _caches.clear()
        _entropy = bool(entropy)


def _detect_secrets(text: str, filename: str) -> list[PotentialSecret]:
    global _entropy
    with _lock:
        if _entropy is None:
            _apply_settings(False)
            _entropy = False
        elif not _settings_intact(_entropy):  # something swapped the global settings object
            _apply_settings(_entropy)
        if not _may_flag(text):
            return []
        return _scan_like_scan_file(text, filename)


def _may_flag(text: str) -> bool:
    """Whether a plugin could flag anything in `text`, transformed or not: one of the keyword
    plugin's stems, or a match of a provider plugin's pattern anywhere in the text (each is a
    regex a line must match). Several times cheaper than asking every plugin about every line,
    which is what a transcript's check spends its time on (docs/design.md §10a). With the
    entropy plugins on, anything may be flagged."""
    patterns = _prefilter()
    if patterns is None:
        return True
    return bool(_KEYWORD_STEMS.search(text)) or any(p.search(text) for p in patterns)


_patterns: tuple[list[re.Pattern[str]] | None, ...] = ()  # (patterns,) once computed


def _prefilter() -> list[re.Pattern[str]] | None:
    # Under _lock, after configuration: the provider plugins' patterns, or None when a plugin
    # has none (the entropy plugins), so no text can be ruled out.
    global _patterns
    if not _patterns:
        found: list[re.Pattern[str]] | None = []
        for plugin in get_plugins():
            if isinstance(plugin, KeywordDetector):
                continue
            if not isinstance(plugin, RegexBasedDetector) or found is None:
                found = None
                continue
            found += [re.compile(r.pattern, r.flags | re.MULTILINE) for r in plugin.denylist]
        _patterns = (found,)
    return _patterns[0]


def _detect_secrets_hits(text: str, filename: str) -> list[SecretHit]:
    secrets = _detect_secrets(text, filename)
    found = {
        (secret.line_number, secret.type)
        for secret in secrets
        if not _is_documentation_example(secret)
    }
    return [SecretHit(DETECT_SECRETS_PREFIX + type_, type_, line) for line, type_ in sorted(found)]


def _scan_like_scan_file(text: str, filename: str) -> list[PotentialSecret]:
    # Mirrors detect_secrets.core.scan.scan_file: transformed lines (or the raw ones), then the
    # eager transformers only when the first pass found nothing. Lines split on "\n" only, as
    # the fast rules count them.
    # The transformers choose by file name: a StringIO given one is the NamedIO they expect.
    file = cast(NamedIO, io.StringIO(text))
    file.name = filename
    lines = get_transformed_file(file) or io.StringIO(text).readlines()
    secrets = _scan_lines(list(enumerate(lines, 1)), filename)
    if secrets or not _KEYWORD_STEMS.search(text):
        return secrets
    file.seek(0)
    eager = get_transformed_file(file, use_eager_transformers=True)
    if not eager:
        return []
    return _scan_lines(list(enumerate(eager, 1)), filename)


# The eager pass re-reads a text as a config file, so that `password: x` becomes
# `password = "x"`; what it adds to the first pass is the keyword plugin's, whose every keyword
# (its DENYLIST: api_key, db_pass, password, pwd, secret, contraseña, …) holds one of these
# stems. Without one the config parsers, the costliest step of a transcript's check, are skipped
# (a test compares the answers with detect-secrets' own scan).
_KEYWORD_STEMS = re.compile(r"key|pass|pwd|secret|contrase", re.IGNORECASE)


def _scan_lines(lines: list[tuple[int, str]], filename: str) -> list[PotentialSecret]:
    # detect-secrets runs its line filters (one a slow regex) on every line before the
    # plugins. What no plugin flags is never a secret, whatever the filters say, so a file no
    # plugin flags (most memories) is clean without them: the same answers, several times
    # faster on realistic memories (docs/design.md §10a).
    if not _any_plugin_flags(lines, filename):
        return []
    return list(_process_line_based_plugins(lines, filename))


def _any_plugin_flags(lines: list[tuple[int, str]], filename: str) -> bool:
    """Whether a plugin flags a line, each called with what `_process_line_based_plugins`
    gives it (every built-in plugin's `analyze_line` takes all four)."""
    content = [line for _, line in lines]
    plugins = get_plugins()
    for number, line in lines:
        context = get_code_snippet(lines=content, line_number=number)
        stripped = line.rstrip()
        for plugin in plugins:
            if plugin.analyze_line(
                filename=filename, line=stripped, line_number=number, context=context
            ):
                return True
    return False


def _is_documentation_example(secret: PotentialSecret) -> bool:
    # AWS's documentation key (AKIAIOSFODNN7EXAMPLE) is quoted in notes; the fast rule skips
    # it too.
    return secret.type == "AWS Access Key" and (secret.secret_value or "").endswith("EXAMPLE")


def _scan_entry(text: str, filename: str) -> list[SecretHit]:
    fast = scan_text(text)
    flagged = {hit.line for hit in fast}
    extra = [hit for hit in _detect_secrets_hits(text, filename) if hit.line not in flagged]
    return sorted(fast + extra, key=lambda hit: (hit.line, hit.rule_id))


def _cache_for(key: object) -> SecretScanCache:
    # detect-secrets' results depend on the file's type (its keyword rules and transformers
    # choose by extension), so the content-hash cache is kept per file type.
    filename = "memory" + posixpath.splitext(str(key))[1].lower()
    filetype = determine_file_type(filename)
    with _lock:
        cache = _caches.get(filetype)
        if cache is None:
            cache = _caches[filetype] = SecretScanCache(lambda text: _scan_entry(text, filename))
        return cache


def scan_for_push(files: Mapping[K, str]) -> dict[K, list[SecretHit]]:
    """The entries of ``files`` that must not be pushed, each with its hits (line order).

    Clean entries are left out, so an empty result means everything may go. Never raises on
    content; safe to call from several threads.
    """
    blocked: dict[K, list[SecretHit]] = {}
    for key, text in files.items():
        hits = _cache_for(key).scan(text)
        if hits:
            blocked[key] = hits
    return blocked


def redact_with_gate(text: str, filename: str = "transcript.md") -> tuple[str, list[SecretHit]]:
    """``text`` with what both layers find replaced by ``[REDACTED:<label>]``, and the hits.

    For what memhub stores but never shares as it came (session transcripts): the fast rules
    redact their matches; each detect-secrets finding then has its value replaced on its line,
    or, when the value cannot be found there (a transformer read the line differently), the
    whole line. detect-secrets reports one secret per line and plugin, so it runs again on
    the result until it finds nothing more: every value on a line goes, not the first.
    Hits are reported as :func:`scan_for_push` reports them.
    """
    redacted, hits = redact_text(text)
    lines = redacted.split("\n")
    for _ in range(_MAX_PASSES):
        current = "\n".join(lines)
        found = [s for s in _detect_secrets(current, filename) if not _is_documentation_example(s)]
        for secret in found:
            number = secret.line_number
            if not 1 <= number <= len(lines):
                continue
            line, label = lines[number - 1], f"[REDACTED:{secret.type}]"
            value = secret.secret_value or ""
            if len(value) >= 4 and value in line:
                lines[number - 1] = line.replace(value, label)
            else:
                lines[number - 1] = label
            hits.append(SecretHit(DETECT_SECRETS_PREFIX + secret.type, secret.type, number))
        if "\n".join(lines) == current:
            break
    return "\n".join(lines), sorted(set(hits), key=lambda hit: (hit.line, hit.rule_id))


# Each pass redacts at least one value per flagged line; lines hold few. The bound keeps a
# finding that cannot be removed from looping.
_MAX_PASSES = 8
