"""detect-secrets as the push gate runs it (docs/design.md §10a): configured with its keyword
and provider plugins, and a text scanned as its ``scan_file`` scans a file of that name.

detect-secrets keeps its settings in one process-wide object that its own helpers
(``transient_settings``, ``default_settings``) swap in and out: every function here that reads
or changes them is called under :mod:`memapp.memdir.secret_gate`'s lock, and nothing else in
memhub touches them. The entropy plugins (``Base64HighEntropyString``,
``HexHighEntropyString``) and the public-IP plugin flag every quoted checksum in ordinary prose,
so they only run when an admin turns them on. Two default filters are dropped: the
``pragma: allowlist secret`` comment (anyone writing a memory could add it) and secret
verification (which would send a found secret to its provider to test it).

The gate imports this module at its first scan: importing detect-secrets (and the
``requests`` it imports, where nothing else has) is a tenth of a second, which the task worker,
the background process and the one-shot commands would pay at every start and most never scan.
"""

from __future__ import annotations

import io
import re
from typing import cast

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

__all__ = [
    "ENTROPY_PLUGINS",
    "any_plugin_flags",
    "apply_settings",
    "file_type",
    "is_documentation_example",
    "may_flag",
    "scan",
    "scan_lines",
    "settings_intact",
]

ENTROPY_PLUGINS = ("Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector")
_DROPPED_FILTERS = (
    "detect_secrets.filters.allowlist.is_line_allowlisted",
    "detect_secrets.filters.common.is_ignored_due_to_verification_policies",
)


def _plugin_names(entropy: bool) -> set[str]:
    plugins: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = {plugin.__name__ for plugin in plugins}
    return names if entropy else names - set(ENTROPY_PLUGINS)


def apply_settings(entropy: bool) -> None:
    """Configure detect-secrets' global settings for the gate, entropy plugins or not."""
    global _patterns
    _patterns = ()
    settings = get_settings()
    settings.clear()
    settings.configure_plugins([{"name": name} for name in sorted(_plugin_names(entropy))])
    settings.disable_filters(*_DROPPED_FILTERS)


def settings_intact(entropy: bool) -> bool:
    """Whether the global settings are still those :func:`apply_settings` made."""
    settings = get_settings()
    return set(settings.plugins) == _plugin_names(entropy) and not any(
        path in settings.filters for path in _DROPPED_FILTERS
    )


def file_type(filename: str) -> FileType:
    """The type detect-secrets gives a file of this name: its rules choose by it."""
    return determine_file_type(filename)


def may_flag(text: str) -> bool:
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
    # After configuration: the provider plugins' patterns, or None when a plugin has none (the
    # entropy plugins), so no text can be ruled out.
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


def scan(text: str, filename: str) -> list[PotentialSecret]:
    """What detect-secrets' scan_file finds in a file of this name holding `text`."""
    # Mirrors detect_secrets.core.scan.scan_file: transformed lines (or the raw ones), then the
    # eager transformers only when the first pass found nothing. Lines split on "\n" only, as
    # the fast rules count them.
    # The transformers choose by file name: a StringIO given one is the NamedIO they expect.
    file = cast(NamedIO, io.StringIO(text))
    file.name = filename
    lines = get_transformed_file(file) or io.StringIO(text).readlines()
    secrets = scan_lines(list(enumerate(lines, 1)), filename)
    if secrets or not _KEYWORD_STEMS.search(text):
        return secrets
    file.seek(0)
    eager = get_transformed_file(file, use_eager_transformers=True)
    if not eager:
        return []
    return scan_lines(list(enumerate(eager, 1)), filename)


# The eager pass re-reads a text as a config file, so that `password: x` becomes
# `password = "x"`; what it adds to the first pass is the keyword plugin's, whose every keyword
# (its DENYLIST: api_key, db_pass, password, pwd, secret, contraseña, …) holds one of these
# stems. Without one the config parsers, the costliest step of a transcript's check, are skipped
# (a test compares the answers with detect-secrets' own scan).
_KEYWORD_STEMS = re.compile(r"key|pass|pwd|secret|contrase", re.IGNORECASE)


def scan_lines(lines: list[tuple[int, str]], filename: str) -> list[PotentialSecret]:
    """detect-secrets' line-based scan of numbered lines, skipped when no plugin flags one."""
    # detect-secrets runs its line filters (one a slow regex) on every line before the
    # plugins. What no plugin flags is never a secret, whatever the filters say, so a file no
    # plugin flags (most memories) is clean without them: the same answers, several times
    # faster on realistic memories (docs/design.md §10a).
    if not any_plugin_flags(lines, filename):
        return []
    return list(_process_line_based_plugins(lines, filename))


def any_plugin_flags(lines: list[tuple[int, str]], filename: str) -> bool:
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


def is_documentation_example(secret: PotentialSecret) -> bool:
    """AWS's documentation key (AKIAIOSFODNN7EXAMPLE) is quoted in notes; the fast rule skips
    it too."""
    return secret.type == "AWS Access Key" and (secret.secret_value or "").endswith("EXAMPLE")
