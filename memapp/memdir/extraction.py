"""What a model may propose, and how memhub checks it (docs/design.md §14.5–§14.6).

Extraction (and later consolidation) asks a model, through one forced tool call, which memories
to create, update or delete. This module holds that contract without Django: the tool and its
schema, the request text, the validation that drops every change breaking a rule (with the
reason shown to a person), the checks shown beside each change, and the offline detector that
still catches explicit requests ("remember that …") when memhub has no API key.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memapp.memdir.frontmatter import MEMORY_TYPES
from memapp.memdir.keys import PathTraversalError, validate_key
from memapp.memdir.lint import missing_why_how, relative_dates, similar_to
from memapp.memdir.secret_rules import SecretHit, scan_text
from memapp.memdir.store_files import FileKind, classify
from memapp.memdir.transcripts import Entry

__all__ = [
    "EXTRACTION_SYSTEM",
    "ACTIONS",
    "USER_PRIVATE_REASON",
    "WHAT_NOT_TO_SAVE",
    "MAX_CHANGES",
    "PROPOSE_TOOL",
    "TOOL_NAME",
    "Check",
    "Dropped",
    "ExplicitRequest",
    "ProposedChange",
    "Target",
    "build_request",
    "derivable",
    "change_checks",
    "explicit_requests",
    "offline_change",
    "substance_name",
    "validate_changes",
]

TOOL_NAME = "propose_memory_changes"
ACTIONS = ("create", "update", "delete")
SCOPES = ("private", "team")
MAX_CHANGES = 20  # per model answer; the rest are dropped as over the cap
MAX_BODY_BYTES = 250_000  # a memory file's limit (docs/design.md §10)
MAX_NAME = 200
MAX_DESCRIPTION = 500

PROPOSE_TOOL: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": (
        "Propose changes to the user's memory files. A person reviews every change before it "
        "is written. Propose nothing (an empty list) when nothing is worth remembering."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "changes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": list(ACTIONS)},
                        "scope": {"type": "string", "enum": list(SCOPES)},
                        "file": {"type": "string", "description": "<key>.md, relative"},
                        "name": {"type": "string"},
                        "description": {"type": "string", "description": "one line"},
                        "type": {"type": "string", "enum": list(MEMORY_TYPES)},
                        "body": {"type": "string"},
                        "reason": {"type": "string", "description": "why, for the reviewer"},
                    },
                    "required": ["action", "scope", "file", "reason"],
                },
            }
        },
        "required": ["changes"],
    },
}

# What not to save, as the agent's own memory instructions list it, with the rule that it holds
# even when the user asks; the extraction and distillation requests both carry it.
WHAT_NOT_TO_SAVE = """\
What NOT to save, even when it seems useful:
- Code patterns, conventions, architecture, file paths and project structure: the code shows \
them, and reading it is more current than a memory.
- Git history, recent changes and who changed what: git log and git blame are authoritative.
- Debugging recipes and fix steps: the fix is in the code, the reason in the commit message.
- Anything CLAUDE.md (or the project's other instruction files) already says.
- The current task's state, progress or next steps: they belong to this conversation, not to \
memory.
- Secrets of any kind.
These exclusions apply even when the user explicitly asks to remember something: keep instead \
the decision, deadline, preference or reason behind the request, if it has one, or nothing \
("remember this PR list" becomes the release deadline or the decision the list is for, or \
nothing at all)."""

EXTRACTION_SYSTEM = (
    """\
You maintain the file-based memory of an AI coding agent. Read the new part of a conversation \
between a user and the agent, and propose the memory changes worth keeping for future \
conversations, by calling the tool propose_memory_changes once. A person reviews every change \
before it is written.

What is worth keeping: who the user is and how they like to work (type user); guidance the user \
gave about how to work, corrections and confirmed approaches (type feedback, with a **Why:** \
line and a **How to apply:** line); decisions, deadlines and context of the project that the \
code does not show (type project, with absolute dates, never "next Thursday"); where to find \
things outside the repository (type reference). What the user explicitly asks to be \
remembered is kept, unless it is something the list below excludes.

"""
    + WHAT_NOT_TO_SAVE
    + """

Rules:
- Prefer updating an existing memory (listed in the manifests, some with their full text) to \
creating a near-duplicate; delete a memory the conversation shows to be wrong.
- scope "private" is this user's own memory; "team" is shared with everyone on the project: \
use it only for knowledge the whole team should have, never for anything personal.
- file is a path relative to its directory ending in .md; for a new memory choose a short \
name in the style of the existing files.
- description is one line; it is what recall reads to decide whether the memory helps.
- Propose an empty list when nothing is worth keeping."""
)


@dataclass(frozen=True)
class ProposedChange:
    action: str
    scope: str
    file: str
    name: str = ""
    description: str = ""
    type: str | None = None
    body: str = ""
    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "scope": self.scope,
            "file": self.file,
            "name": self.name,
            "description": self.description,
            "type": self.type,
            "body": self.body,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Dropped:
    """A change that was not kept, and why (shown to the reviewer; never a secret's value)."""

    index: int
    file: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "file": self.file, "reason": self.reason}


@dataclass(frozen=True)
class Target:
    """A store a change may go to: its directory and its top-level entries that are stores of
    their own (never written through it)."""

    root: Path
    exclude: tuple[str, ...] = ()


def _string(raw: Mapping[str, Any], name: str, limit: int | None = None) -> str:
    value = raw.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{name} is not text")
    if limit is not None and len(value) > limit:
        raise ValueError(f"{name} is longer than {limit} characters")
    return value


def _check_key(target: Target, key: str) -> None:
    """The store's file rule (docs/design.md §4, §6a): a safe key naming one of its topic
    files."""
    try:
        validate_key(target.root, key)
    except PathTraversalError as exc:
        raise ValueError(f"the file name is refused ({exc.rule})") from None
    kind = classify(key, target.exclude)
    if kind is not FileKind.TOPIC:
        raise ValueError(f"not a topic file: {kind.value}")


def _one_change(raw: object, targets: Mapping[str, Target]) -> ProposedChange:
    if not isinstance(raw, Mapping):
        raise ValueError("a change is not an object")
    action = _string(raw, "action")
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action[:40]!r}")
    scope = _string(raw, "scope") or "private"
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope[:40]!r}")
    if scope not in targets:
        raise ValueError(f"no {scope} store to change here")
    key = _string(raw, "file", 1024).strip()
    target = targets[scope]
    _check_key(target, key)
    exists = (target.root / key).is_file()
    if action in ("update", "delete") and not exists:
        raise ValueError(f"{action}: there is no such memory")
    if action == "create" and exists:
        raise ValueError("create: the file already exists (an update was meant?)")
    change = ProposedChange(action, scope, key, reason=_string(raw, "reason", 2000).strip())
    if action == "delete":
        return change
    name = _string(raw, "name", MAX_NAME).strip()
    description = _string(raw, "description", MAX_DESCRIPTION).strip()
    memory_type = _string(raw, "type")
    body = _string(raw, "body")
    if not name or not description:
        raise ValueError(f"{action}: name and description are required")
    if any(mark in description or mark in name for mark in "\n\r\v\f\x85\u2028\u2029"):
        raise ValueError("name and description must be one line")
    if memory_type not in MEMORY_TYPES:
        raise ValueError(f"unknown type {memory_type[:40]!r}")
    if len(body.encode("utf-8", "surrogatepass")) > MAX_BODY_BYTES:
        raise ValueError(f"the body is over {MAX_BODY_BYTES:,} bytes")
    if "\0" in body:
        raise ValueError("the body holds NUL bytes")
    return replace(change, name=name, description=description, type=memory_type, body=body)


def _secret_reason(change: ProposedChange, check: Callable[[str], Sequence[SecretHit]]) -> str:
    hits = check("\n".join([change.name, change.description, change.body]))
    return ", ".join(sorted({hit.label for hit in hits}))


USER_PRIVATE_REASON = (
    "a user memory is private: it is never proposed into team memory (rule user_memory_private)"
)


def validate_changes(
    raw_changes: object,
    targets: Mapping[str, Target],
    *,
    max_changes: int = MAX_CHANGES,
    secret_check: Callable[[str], Sequence[SecretHit]] = scan_text,
) -> tuple[list[ProposedChange], list[Dropped]]:
    """The changes that may be proposed, and the dropped ones with their reasons.

    A change is dropped for an unknown action, scope or type, a file name refused by the key
    rules (docs/design.md §4) or outside its store, an update or delete of a file that does not
    exist, a create of one that does, missing or multi-line fields, a body over the size cap,
    a secret (`secret_check`, the fast rules unless the caller passes the push gate), a second
    change to the same file, a `user` memory for team memory (user memories are private), or
    beyond `max_changes`. Raises ValueError only when the answer
    is not a list at all (a bad tool input, worth asking again).
    """
    if not isinstance(raw_changes, list):
        raise ValueError("changes is not a list")
    kept: list[ProposedChange] = []
    dropped: list[Dropped] = []
    seen: set[tuple[str, str]] = set()
    for index, raw in enumerate(raw_changes):
        file = raw.get("file") if isinstance(raw, Mapping) else None
        shown = file[:200] if isinstance(file, str) else ""
        if len(kept) >= max_changes:
            dropped.append(Dropped(index, shown, f"over the cap of {max_changes} changes"))
            continue
        try:
            change = _one_change(raw, targets)
        except ValueError as exc:
            dropped.append(Dropped(index, shown, str(exc)))
            continue
        if (change.scope, change.file) in seen:
            dropped.append(Dropped(index, shown, "a second change to the same file"))
            continue
        if change.scope == "team" and change.type == "user":
            dropped.append(Dropped(index, shown, USER_PRIVATE_REASON))
            continue
        secret = _secret_reason(change, secret_check)
        if secret:
            dropped.append(Dropped(index, shown, f"holds what looks like a secret ({secret})"))
            continue
        seen.add((change.scope, change.file))
        kept.append(change)
    return kept, dropped


@dataclass(frozen=True)
class Check:
    """One finding about a proposed change, for the reviewer: `level` is `bad` (it will be
    refused), `warn` (worth a look) or `ok`."""

    code: str
    level: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "level": self.level, "message": self.message}


def change_checks(
    change: ProposedChange,
    others: Iterable[tuple[str, str]] = (),
    *,
    index_lines: int = 0,
    max_index_lines: int = 200,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> list[Check]:
    """Secrets, caps, relative dates, missing **Why:**/**How to apply:** and near-duplicates of
    the store's other memories (`others`: key, description) for one change."""
    if change.action == "delete":
        return []
    checks = []
    hits = scan_text("\n".join([change.name, change.description, change.body]))
    if hits:
        labels = ", ".join(sorted({hit.label for hit in hits}))
        checks.append(Check("secret", "bad", f"holds what looks like a secret ({labels})"))
    size = len(change.body.encode("utf-8", "surrogatepass"))
    if size > max_body_bytes:
        checks.append(Check("cap", "bad", f"{size:,} bytes: over the cap of {max_body_bytes:,}"))
    if change.action == "create" and index_lines >= max_index_lines:
        checks.append(
            Check(
                "cap",
                "warn",
                f"MEMORY.md already has {index_lines} lines; agents load only {max_index_lines}",
            )
        )
    if change.type == "project":
        dates = relative_dates(change.body)
        if dates:
            shown = ", ".join(f"“{d}”" for d in dates[:3])
            checks.append(Check("relative_dates", "warn", f"relative dates: {shown}"))
    missing = missing_why_how(change.type, change.body)
    if missing:
        checks.append(Check("why_how", "warn", "missing " + " and ".join(missing)))
    pool = [(key, text) for key, text in others if key != change.file]
    similar = similar_to(change.description, pool, threshold=0.7)
    if similar:
        checks.append(Check("duplicate", "warn", "much like " + ", ".join(similar[:3])))
    return checks


def build_request(
    manifests: Mapping[str, str],
    bodies: Sequence[tuple[str, str, str]],
    messages: str,
    today: datetime.date,
) -> str:
    """The user message of an extraction request: the manifest of each store (scope → text,
    docs/design.md §6), the full text of the memories most likely to change (scope, key,
    text), and the new messages."""
    parts = [f"Today is {today.isoformat()}."]
    for scope, manifest in manifests.items():
        listing = manifest.strip() or "(no memories yet)"
        parts.append(f"## Manifest of the {scope} memory directory\n\n{listing}")
    if bodies:
        texts = "\n\n".join(f"### {scope}: {key}\n\n{text.strip()}" for scope, key, text in bodies)
        parts.append(f"## Existing memories most likely to change\n\n{texts}")
    parts.append(f"## New messages\n\n{messages.strip()}")
    return "\n\n".join(parts) + "\n"


# --- explicit requests, caught without a model ---------------------------------------------------


@dataclass(frozen=True)
class ExplicitRequest:
    """Something a person asked to be remembered, in their words."""

    text: str
    type: str  # what it is: feedback, project, user or reference
    entry: str  # the key of the entry it came from


_LEAD = r"(?:^|(?<=[.!?;\n])\s*|\b(?:and|also|so|ok|okay|oh)\s*,?\s*)"
# A clause: up to the end of its sentence (a full stop inside `staging.example.com` is not one).
_CLAUSE = r"(?:[^\n.!?]|[.!?](?=\S)){3,300}"
_REMEMBER = re.compile(
    _LEAD + r"(?:please\s+)?(?:do\s+)?remember(?:\s+that\b|\s*[:,]|\s+(?=to\b))\s*"
    rf"(?P<what>{_CLAUSE})",
    re.IGNORECASE,
)
_PLEASE_REMEMBER = re.compile(
    rf"\bplease\s+remember\b\s*(?:that\b)?\s*[:,]?\s*(?P<what>{_CLAUSE})", re.IGNORECASE
)
_DONT_AGAIN = re.compile(
    r"(?P<what>\b(?:don'?t|do\s+not|never)\b(?:[^\n.!?]|[.!?](?=\S)){3,300}?)\s*\bagain\b"
    r"[\s,;:.!—–-]*"
    r"(?:please\s+)?remember\b",
    re.IGNORECASE,
)
_RULE_START = re.compile(
    r"^(?:to\s+|don'?t\b|do\s+not\b|never\b|always\b|stop\b|avoid\b|prefer\b|use\b|make\s+sure\b"
    r"|keep\b|run\b|check\b|ask\b)",
    re.IGNORECASE,
)


def _clean(what: str) -> str:
    what = " ".join(what.split()).strip(" ,;:—–-\"'")
    what = re.sub(r"^to\s+", "", what, flags=re.IGNORECASE)
    return what[:1].upper() + what[1:] if what else what


_ABOUT_USER = re.compile(r"^(?:i\b|i'm\b|i am\b|i've\b|my\b|me\b)", re.IGNORECASE)
_REFERENCE = re.compile(
    r"https?://|\b(?:dashboard|runbook|wiki|channel|board|ticket|tracker)\b.*\b(?:is|are|lives?)"
    r"\b|\b(?:is|are|lives?|can be found)\s+(?:at|in|on)\s+(?:https?://|[\w-]+(?:\.[\w-]+)+|"
    r"the\s+\w+\s+(?:dashboard|wiki|channel|board))",
    re.IGNORECASE,
)
_TEAM_RULE = re.compile(
    r"^(?:we|the team|everyone|nobody|no one)\s+(?:never|always|don'?t|do not|must|must not|"
    r"shouldn'?t|should not)\b",
    re.IGNORECASE,
)


def _kind(what: str) -> str:
    """What a request is, by its words (docs/design.md §14.12): a rule for the agent or the
    team is feedback, something about the person is user, a pointer elsewhere is reference,
    anything else about the work (a deploy day, a deadline, a decision) is project."""
    what = what.strip()
    if _RULE_START.match(what) or _TEAM_RULE.match(what):
        return "feedback"
    if _ABOUT_USER.match(what):
        return "user"
    if _REFERENCE.search(what):
        return "reference"
    return "project"


# What the code, git or the session itself already records (WHAT_NOT_TO_SAVE), by its words.
_DERIVABLE = [
    (
        re.compile(
            r"\b(?:commit|commits|git log|git blame|branch(?:es)?|pull requests?|PRs?|PR list|"
            r"merged|diff|changelog)\b",
            re.IGNORECASE,
        ),
        "git history",
    ),
    (
        re.compile(r"(?:^|\s)[\w.-]*(?:/[\w.-]+)+\.\w{1,5}\b|\b\w+\.(?:py|js|ts|go|rs|java|rb)\b"),
        "a file path",
    ),
    (
        re.compile(
            r"\b(?:function|class|method|module|directory|folder|file structure|project "
            r"structure|code pattern|naming convention|architecture)\b",
            re.IGNORECASE,
        ),
        "the code's structure",
    ),
    (
        re.compile(
            r"\b(?:fixed (?:it|this|that) by|the fix (?:is|was)|steps to (?:fix|reproduce)|"
            r"stack ?trace|to debug)\b",
            re.IGNORECASE,
        ),
        "a debugging recipe",
    ),
    (
        re.compile(
            r"\b(?:current task|what we'?re (?:doing|working on)|where we (?:are|left off)|"
            r"next steps?|todo list|in progress)\b",
            re.IGNORECASE,
        ),
        "the current task's state",
    ),
    (re.compile(r"\bCLAUDE\.md\b", re.IGNORECASE), "what CLAUDE.md says"),
]


def derivable(text: str) -> str | None:
    """Why `text` is not worth a memory even when asked for (what the code, git, CLAUDE.md or
    the session itself records), or None when it is not derivable in that sense."""
    for pattern, what in _DERIVABLE:
        if pattern.search(text):
            return what
    return None


_NEGATION = {"don't", "dont", "never", "no", "not", "stop", "avoid"}
_FILLER = {
    "was", "were", "has", "have", "had", "been",
    "we", "i", "you", "they", "the", "team", "everyone", "a", "an", "on", "at", "in", "to",
    "of", "for", "with", "and", "or", "that", "this", "please", "remember", "again", "should",
    "must", "will", "can", "be", "is", "are", "it", "ever", "any", "do", "does", "our", "my",
    "always", "shouldn't", "mustn't", "won't", "let's",
}  # fmt: skip
_PREPOSITIONS = {"on", "at", "during", "before", "after", "in"}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def substance_name(text: str) -> str:
    """A memory's name from what it says, not from its sentence's first words: "we never deploy
    on Fridays" is "No Friday deploys", "remember that the freeze starts March 5" is "Freeze
    starts March 5". At most five words."""
    words = [w.strip(".,;:!?\"'()") for w in text.split()]
    words = [w for w in words if w]
    lowered = [w.lower() for w in words]
    negated = any(w in _NEGATION or w.endswith("n't") for w in lowered)
    kept = [
        (w, low)
        for w, low in zip(words, lowered, strict=True)
        if low not in _FILLER and low not in _NEGATION and not low.endswith("n't")
    ]
    # "<verb> on <day>" reads better as "<day> <verb>s": "deploy on Fridays" → "Friday deploys".
    for i, low in enumerate(lowered[:-1]):
        if low in _PREPOSITIONS and i > 0 and lowered[i - 1] not in _FILLER | _NEGATION:
            verb, thing = words[i - 1], _singular(words[i + 1])
            rest = [w for w, _ in kept if w not in (words[i - 1], words[i + 1])]
            kept = [(thing, thing.lower()), (verb + "s", verb.lower() + "s")] + [
                (w, w.lower()) for w in rest
            ]
            break
    name = " ".join(w for w, _ in kept[:5]) or " ".join(words[:5])
    name = ("no " + name) if negated else name
    return name[:1].upper() + name[1:]


def explicit_requests(entries: Iterable[Entry]) -> list[ExplicitRequest]:
    """Explicit requests to remember something in the person's own turns ("remember that we
    deploy on Fridays", "please remember …", "don't … again, remember"), typed by what they
    are (`_kind`: a deploy rule is project or feedback, never user). Questions ("do you
    remember …?") are not requests.
    """
    found: list[ExplicitRequest] = []
    seen: set[str] = set()
    for entry in entries:
        if not entry.is_user_prose or entry.is_sidechain:
            continue
        text = entry.prose
        candidates: list[tuple[str, str]] = []
        for match in _DONT_AGAIN.finditer(text):
            candidates.append((match["what"], "feedback"))
        for pattern in (_REMEMBER, _PLEASE_REMEMBER):
            for match in pattern.finditer(text):
                end = match.end()
                if text[end : end + 1] == "?":
                    continue
                what = match["what"]
                candidates.append((what, _kind(what)))
        for what, kind in candidates:
            cleaned = _clean(what)
            if len(cleaned) < 3 or cleaned.lower() in seen:
                continue
            seen.add(cleaned.lower())
            found.append(ExplicitRequest(cleaned, kind, entry.key))
    return found


def offline_change(request: ExplicitRequest, file: str, today: datetime.date) -> ProposedChange:
    """An explicit request as a proposed private memory (`file` chosen by the caller), named
    from its substance."""
    sentence = request.text.rstrip(".!") + "."
    name = substance_name(request.text)
    description = sentence if len(sentence) <= 150 else sentence[:149] + "…"
    asked = f"the user asked for this to be remembered on {today.isoformat()}"
    if request.type in ("feedback", "project"):
        body = (
            f"{sentence}\n\n**Why:** {asked}.\n"
            "**How to apply:** follow it in this project unless the user says otherwise.\n"
        )
    else:
        body = f"{sentence}\n\n({asked[0].upper()}{asked[1:]}.)\n"
    return ProposedChange(
        "create",
        "private",
        file,
        name=name,
        description=description,
        type=request.type,
        body=body,
        reason="explicit request in the conversation (caught without a model)",
    )
