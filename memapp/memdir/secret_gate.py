"""The secret gate before a push: the fast rules plus detect-secrets (docs/design.md §10a).

:func:`scan_for_push` takes the entries about to leave (key → text) and returns the ones that
must not, with each hit's rule, label and line, never the value. Hits from detect-secrets get
the rule id ``detect-secrets:<its secret type>`` (``detect-secrets:Secret Keyword``) and the
type as label. A detect-secrets hit on a line the fast rules already flagged is left out: the
person fixing the file sees one reason per line.

detect-secrets (configured and run by :mod:`memapp.memdir.detect_secrets_scan`, imported at the
first scan) keeps its settings in one process-wide object, so it is configured here once,
under a module lock, and every detect-secrets scan runs under the same lock. Its entropy and
public-IP plugins only run when an admin turns them on (``configure(entropy=True)``).

Each entry is scanned in memory as detect-secrets' ``scan_file`` scans a file of that name,
without the filename filters that skip whole files (``*swagger*``, ``package-lock.json``,
``*.css``): a memory is scanned whatever it is called. Results are cached by content hash, so
unchanged entries are never scanned twice.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, TypeVar

from memapp.memdir.secret_rules import (
    SecretHit,
    SecretScanCache,
    redact_text,
    redaction,
    scan_name,
    scan_text,
)

if TYPE_CHECKING:
    from detect_secrets.core.potential_secret import PotentialSecret
    from detect_secrets.util.filetype import FileType

__all__ = [
    "DETECT_SECRETS_PREFIX",
    "configure",
    "redact_with_gate",
    "scan_for_push",
]

K = TypeVar("K", bound=Hashable)

DETECT_SECRETS_PREFIX = "detect-secrets:"

_lock = threading.Lock()
_entropy: bool | None = None  # None until configured
_caches: dict[FileType, SecretScanCache] = {}


def configure(*, entropy: bool = False) -> None:
    """Set detect-secrets up for the gate; call once at start-up with the admin's flag.

    Calling it again with the same value does nothing; with another value it reconfigures
    (under the lock, so no scan sees a half-made configuration) and forgets cached results.
    The first scan configures with the default (no entropy plugins) if this was never called.
    """
    global _entropy
    from memapp.memdir import detect_secrets_scan as engine  # at the first use: see its doc

    with _lock:
        if _entropy == entropy and engine.settings_intact(entropy):
            return
        engine.apply_settings(entropy)
        if _entropy != entropy:
            _caches.clear()
        _entropy = bool(entropy)


def _detect_secrets(text: str, filename: str) -> list[PotentialSecret]:
    """What detect-secrets finds in `text` as a file of that name, less AWS's documentation
    key (AKIAIOSFODNN7EXAMPLE), which notes quote and the fast rule skips too."""
    global _entropy
    from memapp.memdir import detect_secrets_scan as engine  # at the first use: see its doc

    with _lock:
        if _entropy is None:
            engine.apply_settings(False)
            _entropy = False
        elif not engine.settings_intact(_entropy):  # something swapped the global settings
            engine.apply_settings(_entropy)
        if not engine.may_flag(text):
            return []
        secrets = engine.scan(text, filename)
    return [secret for secret in secrets if not engine.is_documentation_example(secret)]


def _detect_secrets_hits(text: str, filename: str) -> list[SecretHit]:
    found = {(secret.line_number, secret.type) for secret in _detect_secrets(text, filename)}
    return [SecretHit(DETECT_SECRETS_PREFIX + type_, type_, line) for line, type_ in sorted(found)]


def _scan_entry(text: str, filename: str) -> list[SecretHit]:
    fast = scan_text(text)
    flagged = {hit.line for hit in fast}
    extra = [hit for hit in _detect_secrets_hits(text, filename) if hit.line not in flagged]
    return sorted(fast + extra, key=lambda hit: (hit.line, hit.rule_id))


def _cache_for(key: object) -> SecretScanCache:
    # detect-secrets' results depend on the file's type (its keyword rules and transformers
    # choose by extension), so the content-hash cache is kept per file type: a few, whatever
    # names the keys have.
    from memapp.memdir import detect_secrets_scan as engine  # at the first use: see its doc

    filename = "memory" + posixpath.splitext(str(key))[1].lower()
    filetype = engine.file_type(filename)
    with _lock:
        cache = _caches.get(filetype)
        if cache is None:
            cache = _caches[filetype] = SecretScanCache(lambda text: _scan_entry(text, filename))
        return cache


def scan_for_push(files: Mapping[K, str]) -> dict[K, list[SecretHit]]:
    """The entries of ``files`` that must not be pushed, each with its hits (line order; a
    token in the key itself on line 0, :func:`scan_name`).

    Clean entries are left out, so an empty result means everything may go. Never raises on
    content; safe to call from several threads.
    """
    blocked: dict[K, list[SecretHit]] = {}
    for key, text in files.items():
        hits = [*scan_name(str(key)), *_cache_for(key).scan(text)]
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
        for secret in _detect_secrets(current, filename):
            number = secret.line_number
            if not 1 <= number <= len(lines):
                continue
            line, label = lines[number - 1], redaction(secret.type)
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
