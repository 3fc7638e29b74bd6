"""The memory core: read and write agent memory directories exactly as coding agents do.

Pure Python, no Django imports. Each concept lives in its own module; this package re-exports
the public surface, so callers import from `memapp.memdir` only. The names are loaded on first
use (PEP 562), so a caller that needs one small module, such as a hook that must start in a
few milliseconds, does not pay for YAML and the recall ranker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> (module, name in that module).
_EXPORTS: dict[str, tuple[str, str]] = {
    "delete_file": ("atomic", "delete_file"),
    "write_atomic": ("atomic", "write_atomic"),
    "RecalledMemory": ("freshness", "RecalledMemory"),
    "memory_age": ("freshness", "memory_age"),
    "memory_age_days": ("freshness", "memory_age_days"),
    "memory_header": ("freshness", "memory_header"),
    "render_recalled": ("freshness", "render_recalled"),
    "staleness_note": ("freshness", "staleness_note"),
    "truncate_for_surfacing": ("freshness", "truncate_for_surfacing"),
    "FrontmatterError": ("frontmatter", "FrontmatterError"),
    "MEMORY_TYPES": ("frontmatter", "MEMORY_TYPES"),
    "Memory": ("frontmatter", "Memory"),
    "parse_memory": ("frontmatter", "parse_memory"),
    "render_memory": ("frontmatter", "render_memory"),
    "INDEX_FILENAME": ("index", "INDEX_FILENAME"),
    "IndexEntry": ("index", "IndexEntry"),
    "IndexHealth": ("index", "IndexHealth"),
    "IndexTruncation": ("index", "IndexTruncation"),
    "MAX_INDEX_BYTES": ("index", "MAX_INDEX_BYTES"),
    "MAX_INDEX_LINES": ("index", "MAX_INDEX_LINES"),
    "delete_index_entry": ("index", "delete_index_entry"),
    "format_index_entry": ("index", "format_index_entry"),
    "index_health": ("index", "index_health"),
    "is_linkable": ("index", "is_linkable"),
    "load_index": ("index", "load_index"),
    "parse_index_entries": ("index", "parse_index_entries"),
    "read_index": ("index", "read_index"),
    "truncate_index": ("index", "truncate_index"),
    "with_index_entry": ("index", "with_index_entry"),
    "without_index_entry": ("index", "without_index_entry"),
    "write_index_entry": ("index", "write_index_entry"),
    "PathTraversalError": ("keys", "PathTraversalError"),
    "validate_key": ("keys", "validate_key"),
    "validate_memory_dir_override": ("keys", "validate_memory_dir_override"),
    "memory_warnings": ("lint", "memory_warnings"),
    "missing_why_how": ("lint", "missing_why_how"),
    "near_duplicates": ("lint", "near_duplicates"),
    "relative_dates": ("lint", "relative_dates"),
    "FoundStore": ("memory_dirs", "FoundStore"),
    "discover_memory_dirs": ("memory_dirs", "discover_memory_dirs"),
    "RecallIndex": ("offline_recall", "RecallIndex"),
    "match_spans": ("offline_recall", "match_spans"),
    "recall_index": ("offline_recall", "recall_index"),
    "recall_offline": ("offline_recall", "recall_offline"),
    "select_reason": ("offline_recall", "select_reason"),
    "agent_memory_dir": ("paths", "agent_memory_dir"),
    "auto_dream_enabled": ("paths", "auto_dream_enabled"),
    "auto_memory_enabled": ("paths", "auto_memory_enabled"),
    "canonical_git_root": ("paths", "canonical_git_root"),
    "config_home": ("paths", "config_home"),
    "load_user_settings": ("paths", "load_user_settings"),
    "memory_base": ("paths", "memory_base"),
    "memory_dir_for": ("paths", "memory_dir_for"),
    "original_path": ("paths", "original_path"),
    "parse_repo_slug": ("paths", "parse_repo_slug"),
    "repo_slug_for": ("paths", "repo_slug_for"),
    "sanitize_path": ("paths", "sanitize_path"),
    "PromptRequest": ("prompt", "PromptRequest"),
    "PromptResult": ("prompt", "PromptResult"),
    "assemble_prompt": ("prompt", "assemble_prompt"),
    "choose_mode": ("prompt", "choose_mode"),
    "MemoryHeader": ("scan", "MemoryHeader"),
    "ScanCache": ("scan", "ScanCache"),
    "detect_type_form": ("scan", "detect_type_form"),
    "format_manifest": ("scan", "format_manifest"),
    "scan_memory_files": ("scan", "scan_memory_files"),
    "SECRET_RULES": ("secret_rules", "RULES"),
    "SecretHit": ("secret_rules", "SecretHit"),
    "SecretScanCache": ("secret_rules", "SecretScanCache"),
    "scan_text": ("secret_rules", "scan_text"),
    "FileKind": ("store_files", "FileKind"),
    "FileRejected": ("store_files", "FileRejected"),
    "check_entries": ("store_files", "check_entries"),
    "check_entry": ("store_files", "check_entry"),
    "checksum": ("store_files", "checksum"),
    "classify": ("store_files", "classify"),
    "entry_path": ("store_files", "entry_path"),
    "read_store": ("store_files", "read_store"),
    "split_batches": ("store_files", "split_batches"),
    "store_checksums": ("store_files", "store_checksums"),
    "walk_store": ("store_files", "walk_store"),
    "write_entries": ("store_files", "write_entries"),
}

__all__ = [
    "FileKind",
    "FileRejected",
    "check_entries",
    "check_entry",
    "checksum",
    "classify",
    "entry_path",
    "read_store",
    "split_batches",
    "store_checksums",
    "walk_store",
    "write_entries",
    "INDEX_FILENAME",
    "MAX_INDEX_BYTES",
    "MAX_INDEX_LINES",
    "MEMORY_TYPES",
    "FoundStore",
    "FrontmatterError",
    "IndexEntry",
    "IndexHealth",
    "IndexTruncation",
    "Memory",
    "MemoryHeader",
    "PathTraversalError",
    "PromptRequest",
    "PromptResult",
    "RecallIndex",
    "SECRET_RULES",
    "SecretHit",
    "SecretScanCache",
    "RecalledMemory",
    "ScanCache",
    "write_index_entry",
    "assemble_prompt",
    "choose_mode",
    "agent_memory_dir",
    "auto_dream_enabled",
    "auto_memory_enabled",
    "canonical_git_root",
    "config_home",
    "delete_file",
    "detect_type_form",
    "discover_memory_dirs",
    "format_index_entry",
    "format_manifest",
    "index_health",
    "is_linkable",
    "load_user_settings",
    "match_spans",
    "memory_age",
    "memory_age_days",
    "load_index",
    "memory_base",
    "memory_dir_for",
    "memory_header",
    "memory_warnings",
    "missing_why_how",
    "near_duplicates",
    "parse_index_entries",
    "parse_memory",
    "original_path",
    "parse_repo_slug",
    "read_index",
    "recall_index",
    "recall_offline",
    "relative_dates",
    "delete_index_entry",
    "without_index_entry",
    "render_memory",
    "render_recalled",
    "repo_slug_for",
    "sanitize_path",
    "scan_memory_files",
    "scan_text",
    "select_reason",
    "staleness_note",
    "truncate_for_surfacing",
    "truncate_index",
    "with_index_entry",
    "validate_key",
    "validate_memory_dir_override",
    "write_atomic",
]


def __getattr__(name: str) -> Any:
    try:
        module, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from memapp.memdir.atomic import delete_file, write_atomic
    from memapp.memdir.freshness import (
        RecalledMemory,
        memory_age,
        memory_age_days,
        memory_header,
        render_recalled,
        staleness_note,
        truncate_for_surfacing,
    )
    from memapp.memdir.frontmatter import (
        MEMORY_TYPES,
        FrontmatterError,
        Memory,
        parse_memory,
        render_memory,
    )
    from memapp.memdir.index import (
        INDEX_FILENAME,
        MAX_INDEX_BYTES,
        MAX_INDEX_LINES,
        IndexEntry,
        IndexHealth,
        IndexTruncation,
        delete_index_entry,
        format_index_entry,
        index_health,
        is_linkable,
        load_index,
        parse_index_entries,
        read_index,
        truncate_index,
        with_index_entry,
        without_index_entry,
        write_index_entry,
    )
    from memapp.memdir.keys import PathTraversalError, validate_key, validate_memory_dir_override
    from memapp.memdir.lint import memory_warnings, missing_why_how, near_duplicates, relative_dates
    from memapp.memdir.memory_dirs import FoundStore, discover_memory_dirs
    from memapp.memdir.offline_recall import (
        RecallIndex,
        match_spans,
        recall_index,
        recall_offline,
        select_reason,
    )
    from memapp.memdir.paths import (
        agent_memory_dir,
        auto_dream_enabled,
        auto_memory_enabled,
        canonical_git_root,
        config_home,
        load_user_settings,
        memory_base,
        memory_dir_for,
        original_path,
        parse_repo_slug,
        repo_slug_for,
        sanitize_path,
    )
    from memapp.memdir.prompt import PromptRequest, PromptResult, assemble_prompt, choose_mode
    from memapp.memdir.scan import (
        MemoryHeader,
        ScanCache,
        detect_type_form,
        format_manifest,
        scan_memory_files,
    )
    from memapp.memdir.secret_rules import RULES as SECRET_RULES
    from memapp.memdir.secret_rules import SecretHit, SecretScanCache, scan_text
    from memapp.memdir.store_files import (
        FileKind,
        FileRejected,
        check_entries,
        check_entry,
        checksum,
        classify,
        entry_path,
        read_store,
        split_batches,
        store_checksums,
        walk_store,
        write_entries,
    )
