"""Consolidation and distillation of a memory directory, without Django (docs/design.md §14.7,
§14.8).

Consolidation is Claude Code's nightly tidy-up ("dream") in four phases: orient (the index,
the manifest, the bodies), gather (what sessions and daily logs added since the last run, the
health lints), consolidate (merge over create, correct over preserve, relative dates made
absolute) and prune (the index within its caps, one line per entry). With a model it is one
Messages API call with the `propose_memory_changes` tool of `memapp.memdir.extraction`, the
new index being an update of `MEMORY.md`. Without one, `offline_consolidation` proposes what
rules can decide: index repair, pruning to the caps, relative dates resolved against each
file's date, and near-duplicates flagged for a person to merge.

Distillation turns the daily-log entries since its last run into memories, by the same tool or,
offline, one memory per new entry that no memory already says.

Whatever the model proposes, the index that is proposed goes through `plan_index`
(`memapp.memdir.index_plan`), so it never names a file that will not exist and, unless a person
edits it so, fits its caps.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memapp.memdir.absolute_dates import Rewrite, make_dates_absolute
from memapp.memdir.daily_logs import LogEntry
from memapp.memdir.extraction import MAX_BODY_BYTES, WHAT_NOT_TO_SAVE, Dropped, ProposedChange
from memapp.memdir.index import (
    INDEX_FILENAME,
)
from memapp.memdir.index_plan import HOOK_CHARS, IndexPlan, TopicFile, plan_index, shorten
from memapp.memdir.lint import near_duplicates, similar_to
from memapp.memdir.secret_rules import SecretHit, scan_text

__all__ = [
    "CONSOLIDATION_SYSTEM",
    "DISTILLATION_SYSTEM",
    "DUPLICATE_THRESHOLD",
    "DatedMemory",
    "OfflineResult",
    "build_consolidation_request",
    "build_distillation_request",
    "offline_consolidation",
    "offline_distillation",
    "replaced_unsure_dates",
    "take_index_change",
]

DUPLICATE_THRESHOLD = 0.8  # descriptions this alike are flagged for a person to merge

CONSOLIDATION_SYSTEM = """\
You consolidate the file-based memory of an AI coding agent: one memory directory, its index \
MEMORY.md and its topic files. A person reviews every change before it is written. Work in four \
phases, then call the tool propose_memory_changes once with every change.

1. Orient: read the index, the manifest of the topic files (each with the time it was last \
written) and the full text of the memories most likely to need work.
2. Gather: read what happened since the last consolidation (sessions and daily logs, when \
given) and the health findings.
3. Consolidate. Merge over create: fold a memory that repeats another into the one to keep \
(update it, delete the other, and say in reason which memory absorbed what). Correct over \
preserve: update or delete a memory that what happened since shows to be wrong or outdated. \
Make every relative date ("yesterday", "next Tuesday", "in two weeks") absolute, counted from \
the day the file was written. Keep the **Why:** and **How to apply:** lines of feedback and \
project memories.
4. Prune and index: propose the whole new index as an update of MEMORY.md (action "update", \
file "MEMORY.md", the index as body, and a reason): one line per memory, \
`- [Title](file.md) — one-line hook`, each line under about 150 characters, within the caps \
given; no entry for a file that will not exist; no content in the index itself.

Change only what needs it, and propose an empty list when the directory is in good order. Never \
delete what is not kept elsewhere. Never write a secret."""

DISTILLATION_SYSTEM = (
    """\
You distill the daily logs of an AI coding agent into its file-based memory. In daily-log mode \
the agent appends one bullet per thing worth remembering to the log of the day; you turn the \
entries given (those since the last distillation) into topic files. A person reviews every \
change before it is written. Call the tool propose_memory_changes once with every change.

- One memory per subject, not one per entry; prefer updating an existing memory (see the \
manifest and the texts given) to creating a near-duplicate.
- A later entry that corrects or retracts an earlier one wins; an entry asking to forget \
something means updating or deleting that memory.
- Types as tagged in the entries (user, feedback, project, reference); feedback and project \
memories carry a **Why:** line and a **How to apply:** line.
- Make relative dates absolute, counted from the day of the log the entry is in.
- Add a line for each new memory to the index: propose the whole new index as an update of \
MEMORY.md (action "update", file "MEMORY.md", the index as body), one line per memory, \
`- [Title](file.md) — one-line hook`, within the caps given.
- Propose an empty list when nothing is worth keeping.

"""
    + WHAT_NOT_TO_SAVE
)


# --- the model's answer ------------------------------------------------------------------------


def take_index_change(
    raw_changes: object, secret_check: Callable[[str], Sequence[SecretHit]] = scan_text
) -> tuple[list[Any], str | None, list[Dropped]]:
    """Split the model's changes into the topic-file changes (for `validate_changes`) and the
    proposed index: the body of an update of MEMORY.md. A second index change, another action
    on MEMORY.md, a body that is not text, is over 250,000 bytes or holds a secret is dropped
    with its reason. A `changes` that is not a list is returned as it is (the validation
    reports it)."""
    if not isinstance(raw_changes, list):
        return raw_changes, None, []  # type: ignore[return-value]
    others: list[Any] = []
    index: str | None = None
    dropped: list[Dropped] = []
    for position, raw in enumerate(raw_changes):
        file = raw.get("file") if isinstance(raw, Mapping) else None
        if not isinstance(file, str) or file.strip().removeprefix("./") != INDEX_FILENAME:
            others.append(raw)
            continue
        body = raw.get("body")
        reason = ""
        if raw.get("action") != "update":
            reason = "MEMORY.md can only be updated as a whole"
        elif not isinstance(body, str):
            reason = "the new index is not text"
        elif len(body.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
            reason = f"the new index is over {MAX_BODY_BYTES:,} bytes"
        elif "\0" in body:
            reason = "the new index holds NUL bytes"
        elif hits := secret_check(body):
            labels = ", ".join(sorted({hit.label for hit in hits}))
            reason = f"holds what looks like a secret ({labels})"
        elif index is not None:
            reason = "a second change to the same file"
        if reason:
            dropped.append(Dropped(position, INDEX_FILENAME, reason))
        else:
            index = body
    return others, index, dropped


# --- requests ----------------------------------------------------------------------------------


def _section(title: str, text: str, empty: str) -> str:
    return f"## {title}\n\n{text.strip() or empty}"


def build_consolidation_request(
    *,
    today: datetime.date,
    caps: tuple[int, int],
    index: str,
    manifest: str,
    bodies: Sequence[tuple[str, str]],
    findings: Sequence[str],
    since: str,
    sessions: str,
    logs: str,
) -> str:
    """The user message of a consolidation: the four phases' material, in their order.
    `bodies` are (key, text) of the memories most likely to need work; `findings` the health
    lints, one line each; `since` when the last consolidation ran (or that none has)."""
    max_lines, max_bytes = caps
    texts = "\n\n".join(f"### {key}\n\n{text.strip()}" for key, text in bodies)
    parts = [
        f"Today is {today.isoformat()}. The index may hold at most {max_lines} lines and "
        f"{max_bytes:,} bytes.",
        "# Phase 1, orient",
        _section("The index (MEMORY.md)", index, "(MEMORY.md is empty or missing)"),
        _section("Manifest of the topic files, newest first", manifest, "(no topic files)"),
        _section("Memories most likely to need work", texts, "(none)"),
        "# Phase 2, gather",
        _section("Health findings", "\n".join(f"- {line}" for line in findings), "(none)"),
        _section(f"Sessions since the last consolidation ({since})", sessions, "(none)"),
        _section(f"Daily logs since the last consolidation ({since})", logs, "(none)"),
        "# Phases 3 and 4: consolidate, then prune and index, in one call of "
        "propose_memory_changes.",
    ]
    return "\n\n".join(parts) + "\n"


def build_distillation_request(
    *,
    today: datetime.date,
    caps: tuple[int, int],
    index: str,
    manifest: str,
    bodies: Sequence[tuple[str, str]],
    logs: str,
) -> str:
    """The user message of a distillation: the directory as it is, then the new log entries."""
    max_lines, max_bytes = caps
    texts = "\n\n".join(f"### {key}\n\n{text.strip()}" for key, text in bodies)
    parts = [
        f"Today is {today.isoformat()}. The index may hold at most {max_lines} lines and "
        f"{max_bytes:,} bytes.",
        _section("The index (MEMORY.md)", index, "(MEMORY.md is empty or missing)"),
        _section("Manifest of the topic files, newest first", manifest, "(no topic files)"),
        _section("Existing memories most like the entries", texts, "(none)"),
        _section("Daily-log entries to distill", logs, "(none)"),
    ]
    return "\n\n".join(parts) + "\n"


# --- offline -----------------------------------------------------------------------------------


@dataclass
class OfflineResult:
    """What the rules propose (changes, MEMORY.md last), and what they leave to a person."""

    changes: list[ProposedChange]
    index: IndexPlan | None
    duplicates: list[tuple[str, str, float]] = field(default_factory=list)
    unresolved: list[tuple[str, str]] = field(default_factory=list)  # (key, expression)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (entry, why)
    # key → why a date fix is left for a person to tick: a phrase it pinned names no one day.
    unsure: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DatedMemory:
    """A memory whose description or body holds relative dates, as the rules rewrite it."""

    key: str
    name: str
    description: str
    type: str
    body: str
    day: datetime.date


def _dates_reason(rewrites: Sequence[Rewrite], day: datetime.date) -> str:
    done = dict.fromkeys(f"“{r.expression}” → {r.replacement}" for r in rewrites if r.replacement)
    return f"relative dates made absolute (the file was written on {day.isoformat()}): " + (
        "; ".join(done)
    )


def _guessed_dates(rewrites: Sequence[Rewrite]) -> str:
    """Why a date fix is left for a person to tick ("" when every phrase it pinned names one
    day, so the date is sure)."""
    guessed = dict.fromkeys(
        f"“{r.expression}” as {r.replacement}" for r in rewrites if r.replacement and not r.one_day
    )
    if not guessed:
        return ""
    return (
        f"reads {', '.join(guessed)}: the phrase names no one day, so tick it only if that is "
        "the date it meant"
    )


def replaced_unsure_dates(old: str, new: str, day: datetime.date) -> str:
    """Why a model's rewrite of a memory (`old` → `new`, the file written on `day`) is left for
    a person to tick: it drops relative date phrases that recur ("at the end of the week") or
    name no one day ("next month"), which the model may have pinned to a date it guessed; ""
    when it drops none."""
    _, rewrites = make_dates_absolute(old, day)
    folded = new.casefold()
    gone = dict.fromkeys(
        f"“{r.expression}”"
        for r in rewrites
        if not (r.replacement and r.one_day) and r.expression.casefold() not in folded
    )
    if not gone:
        return ""
    return (
        f"replaces {', '.join(gone)}, which recurs or names no one day: tick it only if it "
        "meant one date"
    )


def offline_consolidation(
    *,
    scope: str,
    index: str,
    files: Mapping[str, TopicFile],
    dated: Sequence[DatedMemory],
    caps: tuple[int, int],
) -> OfflineResult:
    """The consolidation rules can decide without a model: relative dates in the `dated`
    memories made absolute against their day; the index repaired (entries of missing files,
    duplicates, over-long lines, unlisted files) and pruned within `caps`; near-duplicate
    descriptions listed for a person to merge. A date fix pinning a phrase that names no one
    day ("next month", "in two weeks") is listed in `unsure`, to be ticked by a person only."""
    changes: list[ProposedChange] = []
    unresolved: list[tuple[str, str]] = []
    unsure: dict[str, str] = {}
    topics = dict(files)
    for memory in dated:
        description, first = make_dates_absolute(memory.description, memory.day)
        body, second = make_dates_absolute(memory.body, memory.day)
        rewrites = first + second
        unresolved += [(memory.key, r.expression) for r in rewrites if r.replacement is None]
        if description == memory.description and body == memory.body:
            continue
        if guessed := _guessed_dates(rewrites):
            unsure[memory.key] = guessed
        changes.append(
            ProposedChange(
                "update",
                scope,
                memory.key,
                memory.name,
                " ".join(description.split()),
                memory.type,
                body,
                _dates_reason(rewrites, memory.day),
            )
        )
        old = topics[memory.key]
        topics[memory.key] = TopicFile(
            old.key, old.title, " ".join(description.split()), old.mtime_ms, old.day
        )
    refreshed = [c.file for c in changes if c.description != files[c.file].description]
    plan = plan_index(index, topics, changed=refreshed, caps=caps)
    if plan.text != index:
        changes.append(
            ProposedChange("update", scope, INDEX_FILENAME, body=plan.text, reason=plan.reason())
        )
    duplicates = near_duplicates(
        [(key, topic.description) for key, topic in sorted(topics.items())], DUPLICATE_THRESHOLD
    )
    return OfflineResult(changes, plan, duplicates, unresolved, unsure=unsure)


_WHY = re.compile(r"\s*\b(?:\*\*)?why(?:\*\*)?\s*:\s*", re.IGNORECASE)
_HOW = re.compile(r"\s*\b(?:\*\*)?how to apply(?:\*\*)?\s*:\s*", re.IGNORECASE)


def _entry_body(text: str, entry: LogEntry) -> str:
    main, _, why = (part.strip() for part in _partition(_WHY, text))
    why, _, how = (part.strip() for part in _partition(_HOW, why)) if why else ("", "", "")
    lines = [main.rstrip(".") + "."]
    if why or how:
        lines.append("")
    if why:
        lines.append(f"**Why:** {why}")
    if how:
        lines.append(f"**How to apply:** {how}")
    stamp = f"{entry.day.isoformat()}{' ' + entry.time if entry.time else ''}"
    lines += ["", f"(From the daily log of {stamp}.)"]
    return "\n".join(lines) + "\n"


def _partition(pattern: re.Pattern[str], text: str) -> tuple[str, str, str]:
    match = pattern.search(text)
    if match is None:
        return text, "", ""
    return text[: match.start()], match.group(), text[match.end() :]


def offline_distillation(
    *,
    scope: str,
    entries: Sequence[LogEntry],
    existing: Sequence[tuple[str, str]],
    index: str,
    files: Mapping[str, TopicFile],
    name_file: Callable[[str, str], str],
    caps: tuple[int, int],
    today: datetime.date,
    secret_check: Callable[[str], Sequence[SecretHit]] = scan_text,
) -> OfflineResult:
    """One proposed memory per new log entry, as rules can: its type from its tag (`project`
    when untagged), relative dates made absolute against the log's day, a **Why:** taken from
    a `Why:` in the entry. An entry that an existing memory (`existing`: key, description) or
    an earlier entry already says is skipped and listed, and so is one `secret_check` finds a
    secret in (a log written before the rules knew its shape, or by hand): a proposal may
    reach team memory. `name_file(name, type)` gives each new memory its file; the index gets
    a line for each, within `caps`. A memory whose dates were pinned from a phrase naming no
    one day is listed in `unsure`."""
    changes: list[ProposedChange] = []
    skipped: list[tuple[str, str]] = []
    unsure: dict[str, str] = {}
    said = list(existing)
    topics = dict(files)
    for entry in entries:
        shown = f"{entry.key}:{entry.number}"
        hits = secret_check(entry.text)
        if hits:
            labels = ", ".join(sorted({hit.label for hit in hits}))
            skipped.append((shown, f"holds what looks like a secret ({labels})"))
            continue
        text, rewrites = make_dates_absolute(entry.text, entry.day)
        main = _partition(_WHY, text)[0].strip()
        similar = similar_to(main, said, DUPLICATE_THRESHOLD)
        if similar:
            skipped.append((shown, f"already said by {similar[0]}"))
            continue
        memory_type = entry.type or "project"
        words = main.split()
        name = " ".join(words[:8]) + ("…" if len(words) > 8 else "")
        description = shorten(main.rstrip(".") + ".", HOOK_CHARS)
        key = name_file(name, memory_type)
        if guessed := _guessed_dates(rewrites):
            unsure[key] = guessed
        changes.append(
            ProposedChange(
                "create",
                scope,
                key,
                name,
                description,
                memory_type,
                _entry_body(text, entry),
                f"daily log {entry.day.isoformat()}, line {entry.number} (distilled without a "
                "model)",
            )
        )
        said.append((key, main))
        topics[key] = TopicFile(key, name, description, _noon_ms(today), today)
    created = [c.file for c in changes]
    plan = plan_index(index, topics, add=created, caps=caps)
    if created and plan.text != index:
        changes.append(
            ProposedChange("update", scope, INDEX_FILENAME, body=plan.text, reason=plan.reason())
        )
    return OfflineResult(changes, plan if created else None, skipped=skipped, unsure=unsure)


def _noon_ms(day: datetime.date) -> int:
    moment = datetime.datetime.combine(day, datetime.time(12), tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)
