"""Session summaries (docs/design.md §14.10): per session, a rolling summary of what was done in it,
with Claude Code's fixed sections, rebuilt from a cursor so each update reads only new messages.

Two writers share the template and the limits: a model (the caller sends it the current summary
and the new messages, and reads the sections back with `parse_summary`), and memhub's own rules
(`OfflineSummary`), which fill what rules can from the transcript's structure: the title and the
task from the first request, files from tool calls, errors from failed tool results, the worklog
from the person's requests. Either way `fit_sections` keeps each section within 2,000 tokens and
the whole within 12,000, folding the oldest lines of the longest sections first.

Tokens are estimated as characters / 4 (no tokenizer here), as docs/design.md §14.10 allows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memapp.memdir.transcripts import Entry

__all__ = [
    "FIRST_TOKENS",
    "SECTIONS",
    "SECTION_TOKENS",
    "SUMMARY_SYSTEM",
    "TOTAL_TOKENS",
    "UPDATE_TOKENS",
    "UPDATE_TOOL_CALLS",
    "OfflineSummary",
    "entry_tokens",
    "estimate_tokens",
    "fit_sections",
    "parse_summary",
    "render_new_messages",
    "render_summary",
    "summary_due",
    "summary_for_context",
]

SECTIONS = (
    "Session Title",
    "Current State",
    "Task specification",
    "Files and Functions",
    "Workflow",
    "Errors & Corrections",
    "Codebase and System Documentation",
    "Learnings",
    "Key results",
    "Worklog",
)
FIRST_TOKENS = 10_000  # a session's first summary, once its messages reach this
UPDATE_TOKENS = 5_000  # then an update after this many more …
UPDATE_TOOL_CALLS = 3  # … and this many tool calls, or a turn that ended without one
SECTION_TOKENS = 2_000
TOTAL_TOKENS = 12_000
CHARS_PER_TOKEN = 4
# How many of each list the rules keep before `fit_sections` folds the rest.
MAX_ITEMS = 200
FOLDED = re.compile(r"^- … (\d+) earlier lines? folded$")

SUMMARY_SYSTEM = f"""\
You keep the rolling summary of one coding-agent session: what was done in this session, for \
the agent to pick up where it left off after its context is compacted or the session resumes.

You get the current summary (empty the first time) and the session's messages since it was \
written. Answer with the whole updated summary in Markdown, these {len(SECTIONS)} sections in \
this order, each a level-1 heading exactly as written, nothing before the first:

{chr(10).join("# " + name for name in SECTIONS)}

- Session Title: 5–10 distinctive words.
- Current State: what is being worked on right now, and the next step.
- Task specification: what the person asked for, with design decisions and constraints.
- Files and Functions: the important files, what they hold and why they matter.
- Workflow: the commands and their order, how to run and test.
- Errors & Corrections: what failed and how it was fixed; approaches that did not work.
- Codebase and System Documentation: the system's parts and how they fit.
- Learnings: what worked, what to avoid.
- Key results: exact outputs the person asked for (answers, tables, figures).
- Worklog: terse steps, one line each, oldest first.

Keep what the current summary says unless the new messages change it; add what they add. Be \
dense: no filler, no repetition. Each section at most {SECTION_TOKENS:,} tokens, the whole at \
most {TOTAL_TOKENS:,}; when over, shorten the least important parts (old worklog lines first). \
Leave a section empty rather than guess. Never copy a secret, token or password.
"""


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def entry_tokens(entry: Entry) -> int:
    """What one entry adds to the session's context, estimated: its prose, tool calls, output."""
    return estimate_tokens(entry.search_text) + sum(estimate_tokens(e) for e in entry.errors)


def summary_due(
    *, built: bool, tokens: int, tokens_at: int, tool_calls: int, tool_calls_at: int, at_rest: bool
) -> bool:
    """Claude Code's triggers (docs/design.md §14.10): a first summary at FIRST_TOKENS; then
    an update once UPDATE_TOKENS more arrived and either UPDATE_TOOL_CALLS tool calls happened
    since or the last assistant turn made no tool call (a natural break). `tokens_at` and
    `tool_calls_at` are the session's counts when the summary was last written."""
    if not built:
        return tokens >= FIRST_TOKENS
    if tokens - tokens_at < UPDATE_TOKENS:
        return False
    return tool_calls - tool_calls_at >= UPDATE_TOOL_CALLS or at_rest


def render_new_messages(entries: Iterable[Entry]) -> str:
    """The new messages as the model reads them: the person's and the agent's prose, each tool
    call in one line, and each failed tool result's first line (tool output left out)."""
    lines = []
    for entry in entries:
        if entry.is_sidechain or entry.type not in ("user", "assistant"):
            continue
        if entry.is_user_prose and entry.prose:
            lines.append(f"[user] {entry.prose}")
        elif entry.type == "assistant" and entry.prose:
            lines.append(f"[assistant] {entry.prose}")
        lines += [f"[tool call] {t.name}: {t.argument}" for t in entry.tools]
        lines += [f"[tool error] {error}" for error in entry.errors]
    return "\n".join(lines)


def parse_summary(text: str) -> dict[str, str]:
    """The sections of a summary in Markdown, by name (missing ones empty); text under an
    unknown heading stays in the section before it. ValueError when it has none of them."""
    sections = dict.fromkeys(SECTIONS, "")
    names = {name.lower(): name for name in SECTIONS}
    current: str | None = None
    found = False
    for line in text.splitlines():
        match = re.fullmatch(r"#\s+(.+?)\s*#*\s*", line)
        if match and match.group(1).lower() in names:
            current, found = names[match.group(1).lower()], True
            continue
        if current is not None:
            sections[current] += line + "\n"
    if not found:
        raise ValueError("the summary has none of the sections")
    return {name: body.strip() for name, body in sections.items()}


def render_summary(sections: Mapping[str, str]) -> str:
    """The summary in Markdown, every section in the template's order."""
    parts = []
    for name in SECTIONS:
        body = sections.get(name, "").strip()
        parts.append(f"# {name}\n{body}\n" if body else f"# {name}\n")
    return "\n".join(parts)


def _fold(body: str, max_chars: int) -> str:
    """`body` within `max_chars`: a list loses its oldest lines (counted in one folded line
    at the top), prose its end."""
    if len(body) <= max_chars:
        return body
    lines = body.splitlines()
    folded = 0
    if lines and (match := FOLDED.match(lines[0])):
        folded, lines = int(match.group(1)), lines[1:]
    if sum(1 for line in lines if line.startswith("- ")) >= len(lines) / 2 and len(lines) > 1:
        size = sum(len(line) + 1 for line in lines)
        while len(lines) > 1 and size + 40 > max_chars:
            size -= len(lines[0]) + 1
            lines.pop(0)
            folded += 1
        head = f"- … {folded} earlier line{'s' if folded != 1 else ''} folded"
        body = "\n".join([head, *lines])
        if len(body) <= max_chars:
            return body
    return body[: max_chars - 1].rstrip() + "…"


def fit_sections(sections: Mapping[str, str]) -> dict[str, str]:
    """The sections within the limits (docs/design.md §14.10): each ≤ SECTION_TOKENS; then,
    while the whole is over TOTAL_TOKENS, the longest section folded to half its size (the
    title and the current state are the last to go: a resumed agent reads them first)."""
    limit = SECTION_TOKENS * CHARS_PER_TOKEN
    fitted = {name: _fold(sections.get(name, "").strip(), limit) for name in SECTIONS}
    total_limit = TOTAL_TOKENS * CHARS_PER_TOKEN
    kept_last = ("Session Title", "Current State")
    while len(render_summary(fitted)) > total_limit:
        candidates = [n for n in SECTIONS if n not in kept_last and len(fitted[n]) > 200]
        if not candidates:
            break
        longest = max(candidates, key=lambda n: len(fitted[n]))
        fitted[longest] = _fold(fitted[longest], len(fitted[longest]) // 2)
    return fitted


def summary_for_context(text: str, max_chars: int) -> str:
    """A summary within `max_chars` for a hook's answer: sections whole in order of use to a
    resumed agent, then the rest of the one that does not fit, cut; empty sections left out."""
    try:
        sections = parse_summary(text)
    except ValueError:
        return text[:max_chars]
    order = (
        "Session Title",
        "Current State",
        "Task specification",
        "Errors & Corrections",
        "Files and Functions",
        "Key results",
        "Workflow",
        "Learnings",
        "Codebase and System Documentation",
        "Worklog",
    )
    kept: dict[str, str] = {}
    used = 0
    for name in order:
        body = sections[name]
        if not body:
            continue
        size = len(name) + len(body) + 5  # "# ", the name, its newline, the body, "\n\n"
        if used + size > max_chars:
            room = max_chars - used - len(name) - 6
            if room > 200:
                kept[name] = body[:room].rstrip() + "…"
            break
        kept[name], used = body, used + size
    return "\n".join(f"# {name}\n{kept[name]}\n" for name in SECTIONS if name in kept).strip()


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


FILE_TOOLS = {
    "Read": "read",
    "Write": "written",
    "Edit": "edited",
    "MultiEdit": "edited",
    "NotebookEdit": "edited",
}
SEARCH_TOOLS = ("Grep", "Glob")


@dataclass
class OfflineSummary:
    """What memhub's rules know of a session, kept between updates (as JSON) so each update
    reads only the entries after the cursor."""

    title: str = ""
    task: str = ""
    files: dict[str, list[str]] = field(default_factory=dict)  # path → what was done to it
    searches: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    worklog: list[str] = field(default_factory=list)
    last_request: str = ""
    last_reply: str = ""
    last_tool: str = ""
    awaiting_correction: bool = False  # the last error has no reply after it yet
    tool_calls: int = 0

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> OfflineSummary:
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in state.items() if key in known})

    def as_state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    def _keep(self, items: list[str], item: str) -> None:
        items.append(item)
        del items[:-MAX_ITEMS]

    def add(self, entries: Iterable[Entry], cwd: str = "") -> None:
        """Read the new entries (the main agent's: a sub-agent's work shows as its call);
        file paths under `cwd` are named relative to it. An error's correction is what the
        agent said next."""
        for entry in entries:
            if entry.is_sidechain:
                continue
            if entry.is_user_prose and entry.prose:
                request = _one_line(entry.prose, 300)
                self.title = self.title or _one_line(entry.prose, 80)
                self.task = self.task or entry.prose.strip()[:4000]
                self.last_request = request
                when = f"{entry.timestamp[11:16]} " if entry.timestamp else ""
                self._keep(self.worklog, f"{when}{request}")
            elif entry.type == "assistant" and entry.prose:
                self.last_reply = _one_line(entry.prose, 600)
                if self.awaiting_correction and self.errors:
                    self.errors[-1] += f" → {_one_line(entry.prose, 300)}"
                self.awaiting_correction = False
            for tool in entry.tools:
                self._tool(tool.name, tool.argument, tool.file_path, cwd)
            for error in entry.errors:
                where = f"{self.last_tool}: " if self.last_tool else ""
                self._keep(self.errors, f"{where}{error}")
                self.awaiting_correction = True

    def _tool(self, name: str, argument: str, path: str | None, cwd: str) -> None:
        self.tool_calls += 1
        self.last_tool = f"{name} `{argument}`" if argument else name
        if path and cwd and path.startswith(cwd.rstrip("/") + "/"):
            path = path[len(cwd.rstrip("/")) + 1 :]
        if path and name in FILE_TOOLS:
            done = self.files.setdefault(path, [])
            if FILE_TOOLS[name] not in done:
                done.append(FILE_TOOLS[name])
            self.files[path] = self.files.pop(path)  # most recently touched last
            if len(self.files) > MAX_ITEMS:
                del self.files[next(iter(self.files))]
        elif name in SEARCH_TOOLS and argument:
            if argument in self.searches:
                self.searches.remove(argument)
            self._keep(self.searches, argument)
        elif name == "Bash" and argument:
            if argument in self.commands:
                self.commands.remove(argument)
            self._keep(self.commands, argument)

    def sections(self) -> dict[str, str]:
        state = []
        if self.last_request:
            state.append(f"Last request: {self.last_request}")
        if self.last_reply:
            state.append(f"Last reply: {self.last_reply}")
        files = [f"- `{path}` ({', '.join(done)})" for path, done in self.files.items()]
        files += [f"- searched for `{pattern}`" for pattern in self.searches]
        return {
            "Session Title": self.title,
            "Current State": "\n".join(state),
            "Task specification": self.task,
            "Files and Functions": "\n".join(files),
            "Workflow": "\n".join(f"- `{command}`" for command in self.commands),
            "Errors & Corrections": "\n".join(f"- {error}" for error in self.errors),
            "Worklog": "\n".join(f"- {line}" for line in self.worklog),
        }
