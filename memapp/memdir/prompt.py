"""The memory section of an agent's system prompt (docs/design.md §9).

One function, `assemble_prompt`, builds it for a mode: `disabled` (nothing), `individual` (one
directory), `combined` (a private and a team directory) or `daily-log` (append-only daily logs,
which takes precedence over team memory). `skip_index` is a modifier of any mode: the agent
writes topic files only and no MEMORY.md content is shown.

The text is the instructions (fixed sections in a fixed order) followed by the index of each
directory, as the client loads it::

    Contents of /home/ana/.claude/projects/-home-ana-app/memory/MEMORY.md (...):

    - [Integration tests use a real database](feedback_testing.md) — no mocks in tests/

A team index's content is wrapped in `<team-memory-content source="shared">` tags, marking it as
written by other people. Choosing the mode from flags and settings is the caller's job;
`choose_mode` holds the precedence.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

from memapp.memdir.index import (
    INDEX_FILENAME,
    MAX_INDEX_BYTES,
    MAX_INDEX_LINES,
    load_index,
    truncate_index,
)

__all__ = [
    "MODES",
    "IndexInfo",
    "PromptRequest",
    "PromptResult",
    "assemble_prompt",
    "choose_mode",
    "daily_log_path",
    "team_index_block",
]

MODES = ("disabled", "individual", "combined", "daily-log")


@dataclass(frozen=True)
class PromptRequest:
    """What to assemble.

    `private_dir` and `team_dir` are read on this machine (a missing directory or index is
    fine). The prompt names them as given, unless `private_display_dir` / `team_display_dir`
    give the paths the agent itself uses (a remote agent's local directories). `team_dir` is
    required in `combined` mode and ignored in the others. `today` dates the daily log (the
    local date when None). `max_lines` and `max_bytes` are the index caps. `agent_scope`
    (`user`, `project` or `local`) makes an individual prompt a sub-agent's own memory
    (docs/design.md §13): its own heading and a note on what its scope means.
    `team_index`: the team index's text when the agent is to see other than the file (the
    index teammates get, docs/design.md §10); None reads the file.
    """

    mode: str
    private_dir: str | os.PathLike[str]
    team_dir: str | os.PathLike[str] | None = None
    skip_index: bool = False
    search_past_context: bool = False
    max_lines: int = MAX_INDEX_LINES
    max_bytes: int = MAX_INDEX_BYTES
    today: datetime.date | None = None
    private_display_dir: str | None = None
    team_display_dir: str | None = None
    agent_scope: str | None = None
    team_index: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown prompt mode {self.mode!r}; expected one of {MODES}")
        if self.mode == "combined" and self.team_dir is None:
            raise ValueError("combined mode needs a team directory")
        if self.max_lines < 1 or self.max_bytes < 1:
            raise ValueError("index caps must be positive")
        if self.agent_scope is not None and self.agent_scope not in AGENT_SCOPE_NOTES:
            raise ValueError(f"unknown agent scope {self.agent_scope!r}")


@dataclass(frozen=True)
class IndexInfo:
    """One index as it was loaded: its path as shown to the agent and how it was cut.

    Counts and flags describe the file before truncation (see `IndexTruncation`).
    """

    path: str
    line_count: int
    byte_count: int
    was_line_truncated: bool
    was_byte_truncated: bool


@dataclass(frozen=True)
class PromptResult:
    """The assembled text, the mode used, its headings in order and the indexes it shows."""

    text: str
    mode: str
    sections: list[str]
    indexes: list[IndexInfo]


def choose_mode(auto_memory: bool, team_memory: bool, daily_log: bool, has_team_dir: bool) -> str:
    """The prompt mode for a set of flags.

    Auto memory off gives `disabled`; daily logs win over team memory; team memory needs a team
    directory to give `combined`; anything else is `individual`.
    """
    if not auto_memory:
        return "disabled"
    if daily_log:
        return "daily-log"
    if team_memory and has_team_dir:
        return "combined"
    return "individual"


def daily_log_path(day: datetime.date) -> str:
    """The daily log for `day`, relative to the memory directory: `logs/YYYY/MM/YYYY-MM-DD.md`."""
    return f"logs/{day:%Y}/{day:%m}/{day.isoformat()}.md"


def assemble_prompt(request: PromptRequest) -> PromptResult:
    """The memory section of the system prompt for `request`.

    Disabled mode gives an empty text with no sections. Otherwise the text is the sections
    (each a heading, a blank line and its body, separated by blank lines), then, unless
    `skip_index` is set, each index: private first, then team.
    """
    if request.mode == "disabled":
        return PromptResult(text="", mode="disabled", sections=[], indexes=[])

    private = _display(request.private_dir, request.private_display_dir)
    if request.mode == "combined":
        assert request.team_dir is not None  # checked by PromptRequest
        team = _display(request.team_dir, request.team_display_dir)
        sections = _combined_sections(private, team, request)
        descriptions = [
            (request.private_dir, private, _PRIVATE_INDEX, False),
            (request.team_dir, team, _TEAM_INDEX, True),
        ]
    elif request.mode == "daily-log":
        day = request.today or datetime.date.today()
        log = _join(private, daily_log_path(day))
        sections = _daily_log_sections(private, log, request)
        descriptions = [(request.private_dir, private, _DISTILLED_INDEX, False)]
    else:
        sections = _individual_sections(private, request)
        descriptions = [(request.private_dir, private, _OWN_INDEX, False)]

    blocks = [f"{heading}\n\n{body}" for heading, body in sections]
    indexes = []
    if not request.skip_index:
        for directory, shown, description, shared in descriptions:
            block, info = _index_block(directory, shown, description, shared, request)
            blocks.append(block)
            indexes.append(info)
    return PromptResult(
        text="\n\n".join(blocks) + "\n",
        mode=request.mode,
        sections=[heading for heading, _ in sections],
        indexes=indexes,
    )


# --- Paths ------------------------------------------------------------------------------------


def _display(directory: str | os.PathLike[str], shown: str | None) -> str:
    text = os.fspath(directory) if shown is None else shown
    return text.rstrip("/\\") or text


def _join(directory: str, name: str) -> str:
    # The agent's path may come from another platform: join with the separator it uses.
    sep = "\\" if "\\" in directory and "/" not in directory else "/"
    return directory + sep + name.replace("/", sep)


# --- Indexes ----------------------------------------------------------------------------------

_OWN_INDEX = "your memory index, kept across conversations"
_PRIVATE_INDEX = "your private memory index"
_TEAM_INDEX = "shared team memory index, synced with your team"
_DISTILLED_INDEX = "memory index distilled from your daily logs"


def _index_block(
    directory: str | os.PathLike[str],
    shown: str,
    description: str,
    shared: bool,
    request: PromptRequest,
) -> tuple[str, IndexInfo]:
    path = _join(shown, INDEX_FILENAME)
    if shared and request.team_index is not None:
        cut = truncate_index(request.team_index, request.max_lines, request.max_bytes)
    else:
        cut = load_index(directory, request.max_lines, request.max_bytes)
    info = IndexInfo(
        path=path,
        line_count=cut.line_count,
        byte_count=cut.byte_count,
        was_line_truncated=cut.was_line_truncated,
        was_byte_truncated=cut.was_byte_truncated,
    )
    if not cut.content:
        return f"{path} ({description}) is currently empty.", info
    content = cut.content
    if shared:
        content = f'<team-memory-content source="shared">\n{content}\n</team-memory-content>'
    return f"Contents of {path} ({description}):\n\n{content}", info


def team_index_block(
    team_dir: str | os.PathLike[str],
    display_dir: str | None = None,
    max_lines: int = MAX_INDEX_LINES,
    max_bytes: int = MAX_INDEX_BYTES,
    text: str | None = None,
) -> tuple[str, IndexInfo]:
    """The team index alone, exactly as the combined prompt shows it, for an agent that writes
    its own memory section but has no team memory of its own (docs/design.md §16); `text`:
    as `PromptRequest.team_index`."""
    request = PromptRequest(
        mode="combined",
        private_dir=team_dir,
        team_dir=team_dir,
        max_lines=max_lines,
        max_bytes=max_bytes,
        team_index=text,
    )
    shown = _display(team_dir, display_dir)
    return _index_block(team_dir, shown, _TEAM_INDEX, True, request)


# --- Sections ---------------------------------------------------------------------------------

Section = tuple[str, str]


@dataclass(frozen=True)
class _TypeGuide:
    name: str
    what: str
    when: str
    use: str
    example: str
    scope: str


_TYPES = (
    _TypeGuide(
        name="user",
        what="who the user is: their role, expertise, responsibilities and goals, and how they "
        "like to work with you.",
        when="you learn something about them that should change how you explain things or what "
        "you suggest.",
        use="pitch explanations at their level and frame suggestions around what they are "
        "trying to achieve. Keep only what helps the work; no judgements about the person.",
        example="The user is a backend engineer, fluent in Go, new to React: explain frontend "
        "ideas by analogy with backend ones.",
        scope="always private.",
    ),
    _TypeGuide(
        name="feedback",
        what='guidance on how to do the work: corrections ("don\'t do that") and confirmations '
        'of a non-obvious approach ("yes, exactly like this").',
        when="the user corrects you, or accepts an unusual choice without pushback. Record "
        "confirmations as well as corrections, or you will drift towards over-caution. Put the "
        "rule first, then a **Why:** line and a **How to apply:** line, so that later you can "
        "judge cases the rule did not foresee.",
        use="apply it from then on, without being told again.",
        example="Integration tests must hit a real database, not mocks. **Why:** mocked tests "
        "passed while a broken migration reached production. **How to apply:** every test "
        "under tests/integration/.",
        scope="private, unless it is a convention for the whole project (how the team writes "
        "commit messages, say); then team.",
    ),
    _TypeGuide(
        name="project",
        what="the state of the work that the code and git history do not show: goals, who does "
        "what, decisions and their reasons, deadlines, incidents.",
        when="you learn such a fact. Write dates as absolute dates (2026-03-05, not "
        '"Thursday"), and add **Why:** and **How to apply:** lines. Facts like these go stale '
        "fast, so record changes to them too.",
        use="understand the reasons behind a request and make better-informed suggestions.",
        example="Merge freeze on main from 2026-03-05 for the mobile release. **Why:** the "
        "release branch is cut that day. **How to apply:** point out when non-urgent work "
        "would land after it.",
        scope="lean team: most project facts concern everyone working on it.",
    ),
    _TypeGuide(
        name="reference",
        what="where information lives outside the repository: issue trackers, dashboards, "
        "runbooks, chat channels, documents.",
        when="you learn where to look for something and what it is for.",
        use="go to the right place when the user mentions that system or the information in it.",
        example="Bugs in the ingestion pipeline are tracked in the Linear project INGEST; the "
        "on-call latency dashboard is grafana.internal/d/api-latency.",
        scope="usually team.",
    ),
)


def _types_section(scoped: bool, intro: str) -> Section:
    items = []
    for guide in _TYPES:
        lines = [
            f"- **{guide.name}**: {guide.what}",
            f"  - Save when {guide.when}",
            f"  - Use it to {guide.use}",
            f"  - Example: {guide.example}",
        ]
        if scoped:
            lines.append(f"  - Scope: {guide.scope}")
        items.append("\n".join(lines))
    return "## Types of memory", intro + "\n\n" + "\n".join(items)


_TYPES_INTRO = (
    "Each memory has exactly one of four types, written in its frontmatter: user, feedback, "
    "project or reference."
)
_DAILY_TYPES_INTRO = (
    "Log entries fall into the same four types that consolidation files memories under: "
    "user, feedback, project and reference. Tag each entry with its type."
)

_NOT_MEMORY = """\
Memory is for what cannot be found again by looking. Do not save:
- code patterns, conventions, architecture, file paths or project structure: read the code;
- git history (who changed what, when, why): `git log` and `git blame` are authoritative;
- fix recipes and debugging steps: the fix is in the code and its context in the commit;
- anything already written in a CLAUDE.md file;
- ephemeral task state: work in progress, this conversation's to-dos, temporary findings;
- credentials and other secrets: note where they are kept, never their value.

This holds even when the user asks you to remember such a thing: save what would not be \
evident later (why it matters, what was surprising about it) rather than the thing itself."""

_NO_SECRETS_IN_TEAM = (
    "Never save secrets in team memory: no API keys, tokens, passwords, private keys, "
    "connection strings with credentials, or personal data. Everyone on the team reads it, and "
    "memhub refuses team memory that looks like a secret, but do not count on that check."
)

_FRONTMATTER_EXAMPLE = """\
```markdown
---
name: Integration tests use a real database
description: Integration tests must hit a real database, not mocks
type: feedback
---
Integration tests must hit a real database, not mocks.

**Why:** mocked tests passed while a broken migration reached production.
**How to apply:** every test under tests/integration/.
```

- `name`: a short title.
- `description`: one specific line on what the memory is about; recall picks memories by it.
- `type`: user, feedback, project or reference.
- If the existing files put the type under `metadata:` (`metadata: {type: feedback}`) or use \
kebab-case names, follow the form the directory already uses."""

_KEEP_TIDY = """\
- Organize by topic, not by date. Before writing, look for a memory on the same subject and \
update it instead of adding a near-duplicate.
- When a memory turns out to be wrong or outdated, correct or delete it."""


def _index_caps(request: PromptRequest) -> str:
    return (
        f"MEMORY.md is loaded into every conversation and cut off after {request.max_lines} "
        f"lines or {request.max_bytes:,} bytes, so keep each entry to one line under ~200 "
        "characters and put the detail in the topic file. It is an index, not a memory: no "
        "frontmatter, no memory content."
    )


def _how_to_save(
    where: str, index_step: str | None, request: PromptRequest, extra: str = ""
) -> Section:
    tidy = _KEEP_TIDY + extra
    if index_step is None:
        body = (
            f"Write each memory to its own topic file {where}, for example `user_role.md` or "
            "`feedback_testing.md`, with this frontmatter:\n\n"
            f"{_FRONTMATTER_EXAMPLE}\n\n"
            "There is no index to maintain here: write topic files only. Memories are found "
            "by their descriptions, so make each one specific.\n"
            f"{tidy}"
        )
    else:
        body = (
            "Saving a memory takes two steps.\n\n"
            f"1. Write the memory to its own topic file {where}, for example `user_role.md` "
            "or `feedback_testing.md`, with this frontmatter:\n\n"
            f"{_FRONTMATTER_EXAMPLE}\n\n"
            f"2. {index_step} `- [Title](file.md) — one-line hook`.\n\n"
            f"- {_index_caps(request)}\n"
            f"{tidy}\n"
            "- When you delete a memory, remove its index entry too."
        )
    return "## How to save memories", body


_WHEN_TO_ACCESS = """\
- Look at your memories when they seem relevant to the task, or when the user refers to earlier \
work or conversations.
- You must look when the user asks you to check, recall or remember something.
- If the user tells you to ignore memory, work as if it were empty: do not use, cite or mention \
what it says.
- Memory can be out of date. When it conflicts with what you see now, trust what you see, and \
{correct} the memory."""

_BEFORE_RECOMMENDING = """\
A memory is a point-in-time observation, not live state. A memory naming a file, function, \
flag or command says it existed when the memory was written; it may since have been renamed, \
moved or removed. Before you recommend something or act on it because of a memory:
- check that a file it names still exists;
- search for a function or flag it names (grep) before telling the user to use it;
- for current state (what is deployed, whether a branch is merged, an issue's status), look at \
the live source; for recent changes, prefer `git log` and the code over memory.

"A memory says X exists" is not "X exists". If a memory turns out to be wrong, {correct} it."""

_OTHER_PERSISTENCE = """\
Memory is for what will help in future conversations. Other tools fit other needs:
- **Plans**: to agree on an approach to non-trivial work before starting, use a plan, not \
memory; when the approach changes, update the plan.
- **Tasks / to-do lists**: to track the steps of the work in this conversation. They end with \
it; do not copy them into memory.
- **CLAUDE.md**: instructions checked into the repository and read by every session of every \
contributor (build commands, repository-wide rules). When something belongs there, suggest \
adding it there instead of saving a memory, and do not repeat its content in memory."""


def _search_past_context(directories: list[str]) -> Section:
    greps = "\n".join(f'  `grep -rn "<term>" {d} --include="*.md"`' for d in directories)
    return "## Searching past context", (
        "When you need something from earlier work that the index does not point to:\n"
        f"1. Search the memory files for a specific term:\n{greps}\n"
        "2. Search your past sessions (and the memories you can see) with `memhub-agent search "
        '"<words>"`: it prints the best matches, each with a short excerpt and where it came '
        "from. Use a few specific words; every word must match."
    )


def _common_tail(
    request: PromptRequest, directories: list[str], correct: str = "correct or delete"
) -> list[Section]:
    tail = [
        ("## When to access memories", _WHEN_TO_ACCESS.format(correct=correct)),
        ("## Before recommending from memory", _BEFORE_RECOMMENDING.format(correct=correct)),
        ("## Memory and other forms of persistence", _OTHER_PERSISTENCE),
    ]
    if request.search_past_context:
        tail.append(_search_past_context(directories))
    return tail


_PURPOSE = (
    "Use it to keep, from one conversation to the next, what you learn about the user, how they "
    "want you to work, the project and where to find things, so that each conversation starts "
    "from that knowledge. When the user asks you to remember something, save it at once"
)
_FORGET = "; when they ask you to forget something, delete it."
_DAILY_FORGET = (
    "; when they ask you to forget something, append an entry saying so, and consolidation will "
    "drop it."
)


# What a sub-agent's memory scope means for what it keeps (docs/design.md §13), as Claude
# Code's agent memory prompt says it.
AGENT_SCOPE_NOTES = {
    "user": "This memory is user-scope: it goes with you into every project, so keep what you "
    "learn general enough to hold in all of them.",
    "project": "This memory is project-scope and reaches your team through version control: "
    "keep what you learn about this project.",
    "local": "This memory is local-scope and stays out of version control: keep what you learn "
    "about this project on this machine.",
}


def _individual_sections(directory: str, request: PromptRequest) -> list[Section]:
    intro = (
        f"You have a persistent, file-based memory directory at `{directory}`. It already "
        "exists: write to it directly with your file tools, without creating it or checking "
        "for it first.\n\n" + _PURPOSE + _FORGET
    )
    index_step = (
        None
        if request.skip_index
        else f"Add a one-line entry for it to `{_join(directory, INDEX_FILENAME)}`:"
    )
    sections = [
        ("# auto memory", intro),
        _types_section(False, _TYPES_INTRO),
        ("## What NOT to save in memory", _NOT_MEMORY),
        _how_to_save(f"in `{directory}`", index_step, request),
        *_common_tail(request, [directory]),
    ]
    if request.agent_scope is not None:
        sections[0] = ("# Persistent Agent Memory", intro)
        sections.append(("## Scope of this memory", AGENT_SCOPE_NOTES[request.agent_scope]))
    return sections


def _combined_sections(private: str, team: str, request: PromptRequest) -> list[Section]:
    intro = (
        "You have a persistent, file-based memory in two directories, a private one and a team "
        "one. Both already exist: write to them directly with your file tools, without creating "
        "them or checking for them first.\n\n" + _PURPOSE + _FORGET
    )
    scope = (
        f"- **Private**, `{private}`: seen only by you and this user. For memories about the "
        "user and for guidance they gave you personally.\n"
        f"- **Team**, `{team}`: shared with everyone working on this project. For knowledge "
        "every contributor benefits from: project context, decisions, deadlines, conventions "
        "the whole team follows, pointers to external systems.\n"
        "- Each type below says which scope it usually belongs to. When in doubt, choose "
        "private: a private memory can be shared later, a shared one has already been read.\n"
        f"- {_NO_SECRETS_IN_TEAM}"
    )
    if request.skip_index:
        index_step = None
    else:
        index_step = (
            "Add a one-line entry for it to the MEMORY.md of the same directory "
            f"(`{_join(private, INDEX_FILENAME)}` or `{_join(team, INDEX_FILENAME)}`; each "
            "directory has its own index):"
        )
    where = "in the private or team directory, as its scope calls for"
    short = "\n- Keep team memory files short, about 4 KB at most: everyone's agents load them."
    return [
        ("# Memory", intro),
        ("## Memory scope", scope),
        _types_section(True, _TYPES_INTRO),
        ("## What NOT to save in memory", _NOT_MEMORY + "\n\n" + _NO_SECRETS_IN_TEAM),
        _how_to_save(where, index_step, request, short),
        *_common_tail(request, [private, team]),
    ]


def _daily_log_sections(directory: str, log: str, request: PromptRequest) -> list[Section]:
    intro = (
        f"You have a persistent, file-based memory directory at `{directory}`. It already "
        "exists: write to it directly with your file tools.\n\n"
        "This session runs for a long time, so memory works as a daily log: as you work, "
        f"append what is worth remembering to today's log, `{log}`. A separate consolidation "
        "process later distills the logs into topic files and the index; you do not maintain "
        "those yourself. Memories are not recalled for you with each prompt in this mode: "
        "when earlier work may matter, read the index and the topic files yourself.\n\n"
        + _PURPOSE
        + _DAILY_FORGET
    )
    how = (
        f"- Append to `{log}`, creating it (and its `logs/YYYY/MM/` folders) if it does not "
        "exist yet. Logs are named by the local date: when the date changes during the "
        "session, continue in the new day's file.\n"
        "- Append only: never rewrite, reorder or delete earlier entries, in this log or older "
        "ones. To correct an entry, append a new one saying so.\n"
        "- One short bullet per entry, starting with the time and the type, for example: "
        "`- 14:05 [feedback] Integration tests must hit a real database, not mocks. Why: "
        "mocked tests hid a broken migration.` Give the reason for feedback and project "
        "entries, and write dates as absolute dates.\n"
        "- Do not write topic files or an index: consolidation builds them from the logs."
    )
    return [
        ("# auto memory", intro),
        _types_section(False, _DAILY_TYPES_INTRO),
        ("## What NOT to save in memory", _NOT_MEMORY),
        ("## How to save memories", how),
        *_common_tail(request, [directory], "append a correction to today's log for"),
    ]
