"""The memory core: read and write agent memory directories exactly as coding agents do.

Pure Python, no Django imports. Each concept lives in its own module; this package re-exports
the public surface, so callers import from `memapp.memdir` only.
"""

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
    add_or_update_index_entry,
    format_index_entry,
    index_health,
    load_index,
    parse_index_entries,
    read_index,
    remove_from_index,
    remove_index_entry,
    truncate_index,
    upsert_index_entry,
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
    auto_memory_enabled,
    canonical_git_root,
    config_home,
    load_user_settings,
    memory_base,
    memory_dir_for,
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

__all__ = [
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
    "add_or_update_index_entry",
    "assemble_prompt",
    "choose_mode",
    "agent_memory_dir",
    "auto_memory_enabled",
    "canonical_git_root",
    "config_home",
    "delete_file",
    "detect_type_form",
    "discover_memory_dirs",
    "format_index_entry",
    "format_manifest",
    "index_health",
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
    "parse_repo_slug",
    "read_index",
    "recall_index",
    "recall_offline",
    "relative_dates",
    "remove_from_index",
    "remove_index_entry",
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
    "upsert_index_entry",
    "validate_key",
    "validate_memory_dir_override",
    "write_atomic",
]
