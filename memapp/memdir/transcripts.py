"""Claude Code transcripts (docs/design.md §14.3): the JSONL file a `Stop` or `SessionEnd` hook
names, read from a cursor, and what memhub keeps of each entry.

A transcript has one JSON object per line: `user`, `assistant`, `system` and `summary` entries
(with `uuid`, `parentUuid`, `sessionId`, `timestamp`, `cwd` and a `message` whose `content` is a
string or a list of blocks), and bookkeeping entries of other types that memhub does not keep.
The file is appended to while the agent works, so its last line may be half written: reading
stops before a line that has no newline yet, and the cursor (a byte offset) only ever moves past
complete lines.

Nothing here raises on content. A line that is not JSON, not an object, not UTF-8, of an unknown
type, or too large even after its tool output is cut, is skipped and counted by reason.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from memapp.memdir.digests import sha256
from memapp.memdir.records import Record
from memapp.memdir.secret_rules import SecretHit, redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

__all__ = [
    "BOOKKEEPING_TYPES",
    "KEPT_TYPES",
    "MAX_BATCH_BYTES",
    "MAX_ENTRY_BYTES",
    "Entry",
    "EntryError",
    "ReadResult",
    "ToolCall",
    "count_turns",
    "entry_key",
    "parse_entry",
    "read_entries",
    "redact_entry",
    "render_messages",
    "shrink_entry",
    "wrote_memory",
]

KEPT_TYPES = ("user", "assistant", "system", "summary")
# What Claude Code writes beside the conversation: attachments (hook output, the environment, the
# model, tool and skill listings), queue operations, file-history snapshots, request and cost
# records. Passed over without being counted as skipped: nothing of the conversation is lost.
BOOKKEEPING_TYPES = frozenset(
    {
        "attachment",
        "queue-operation",
        "file-history-snapshot",
        "last-prompt",
        "custom-title",
        "progress",
        "atis-latch",
        "api-request",
        "api-request-blob",
        "api-request-shape",
        "cost-state",
    }
)
MAX_BATCH_BYTES = 200_000  # one upload's JSON, as for file sync (docs/design.md §18)
MAX_ENTRY_BYTES = 64 * 1024  # one entry, once long tool output is cut
MAX_TOOL_OUTPUT = 4 * 1024  # characters kept of each long string inside a tool result
MAX_LINE_BYTES = 16 * 1024 * 1024  # a longer line is not even parsed
SHORT_ARGUMENT = 120
MAX_ERROR_LINE = 300  # characters kept of a failed tool call's output
# Tools that write files: a call of one of these into the memory dir means the agent kept its
# memory itself (docs/design.md §14.4).
WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
# The argument that says what a tool call did, in one line.
_ARGUMENT_KEYS = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Grep": "pattern",
    "Glob": "pattern",
    "WebFetch": "url",
    "WebSearch": "query",
    "Task": "description",
    "Agent": "description",
}
# User entries the client writes on the person's behalf, not prose they typed.
_NOT_PROSE_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-",
    "<system-reminder>",
    "<user-memory-input>",
    "Caveat: The messages below",
    "[Request interrupted",
)


class EntryError(ValueError):
    """An entry memhub does not keep; `reason` is the counter it is skipped under (bookkeeping
    is not `counted`)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason

    @property
    def counted(self) -> bool:
        return self.reason != "bookkeeping"


# Named tuples, not dataclasses: the Stop hook reads transcripts, and dataclasses loads slowly.
class ToolCall(Record):
    name: str
    argument: str  # one line, at most SHORT_ARGUMENT characters
    file_path: str | None  # for file tools


class Entry(Record):
    """What memhub reads from one kept transcript entry."""

    key: str  # the entry's uuid, or a stable stand-in for entries without one
    type: str
    parent: str | None
    timestamp: str | None
    prose: str  # what the person or the assistant wrote
    tools: tuple[ToolCall, ...] = ()
    output: str = ""  # tool results, cut
    errors: tuple[str, ...] = ()  # the first line of each tool result marked `is_error`
    is_user_prose: bool = False  # a person wrote this turn
    is_sidechain: bool = False  # a sub-agent's message (extraction reads the main agent only)
    interactive: bool | None = None  # from `entrypoint`: False for SDK and `-p` sessions
    cwd: str | None = None

    @property
    def search_text(self) -> str:
        """The text past-context search indexes."""
        lines = [self.prose] if self.prose else []
        lines += [f"{t.name} {t.argument}" for t in self.tools]
        if self.output:
            lines.append(self.output)
        return "\n".join(lines)


class ReadResult:
    """What `read_entries` read: the entries, where to go on, what it skipped and found."""

    def __init__(self, offset: int = 0) -> None:
        self.entries: list[dict[str, Any]] = []
        self.offset = offset  # where the next read starts: after the last complete line consumed
        self.skipped: Counter[str] = Counter()
        self.more = False  # complete lines remain past `offset`
        self.hits: list[SecretHit] = []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def entry_key(obj: Mapping[str, Any]) -> str:
    """The entry's `uuid`; a summary's is its `leafUuid`; anything else its content's hash, so
    the same entry sent twice is stored once."""
    uuid = obj.get("uuid")
    if isinstance(uuid, str) and uuid:
        return uuid[:100]
    leaf = obj.get("leafUuid")
    if obj.get("type") == "summary" and isinstance(leaf, str) and leaf:
        return f"summary:{leaf[:90]}"
    canonical = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _one_line(text: str, limit: int = SHORT_ARGUMENT) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _tool_call(block: Mapping[str, Any]) -> ToolCall:
    name = _text(block.get("name")) or "tool"
    raw_input = block.get("input")
    tool_input: Mapping[str, Any] = raw_input if isinstance(raw_input, Mapping) else {}
    key = _ARGUMENT_KEYS.get(name)
    argument = _text(tool_input.get(key)) if key else ""
    if not argument:
        argument = next((v for v in tool_input.values() if isinstance(v, str) and v), "")
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    return ToolCall(name, _one_line(argument), path if isinstance(path, str) else None)


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(part.get("text")) for part in content if isinstance(part, Mapping)
        ).strip()
    return ""


def _is_prose(text: str) -> bool:
    stripped = text.lstrip()
    return bool(stripped) and not stripped.startswith(_NOT_PROSE_PREFIXES)


def parse_entry(obj: object) -> Entry:
    """Read one transcript entry; EntryError when memhub does not keep it."""
    if not isinstance(obj, Mapping):
        raise EntryError("not_object", "an entry is a JSON object")
    kind = obj.get("type")
    if kind in BOOKKEEPING_TYPES:
        raise EntryError("bookkeeping", f"{kind} entries are the agent's bookkeeping")
    if kind not in KEPT_TYPES:
        raise EntryError("unknown_type", f"entries of type {str(kind)[:40]!r} are not kept")
    entrypoint = _text(obj.get("entrypoint"))
    common = {
        "key": entry_key(obj),
        "type": kind,
        "parent": _text(obj.get("parentUuid")) or None,
        "timestamp": _text(obj.get("timestamp"))[:40] or None,
        "is_sidechain": obj.get("isSidechain") is True,
        "interactive": (not entrypoint.startswith("sdk")) if entrypoint else None,
        "cwd": _text(obj.get("cwd")) or None,
    }
    if kind == "summary":
        return Entry(prose=_text(obj.get("summary")), **common)
    if kind == "system":
        return Entry(prose=_text(obj.get("content")), **common)
    message = obj.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    prose: list[str] = []
    tools: list[ToolCall] = []
    output: list[str] = []
    errors: list[str] = []
    if isinstance(content, str):
        prose.append(content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, Mapping):
                continue
            block_type = block.get("type")
            if block_type == "text":
                prose.append(_text(block.get("text")))
            elif block_type == "tool_use":
                tools.append(_tool_call(block))
            elif block_type == "tool_result":
                output.append(_result_text(block))
                if block.get("is_error") is True:
                    errors.append(_one_line(output[-1], MAX_ERROR_LINE) or "(no output)")
    text = "\n".join(part for part in prose if part).strip()
    user_prose = kind == "user" and obj.get("isMeta") is not True and not output and _is_prose(text)
    return Entry(
        prose=text,
        tools=tuple(tools),
        output="\n".join(output)[:MAX_TOOL_OUTPUT],
        errors=tuple(errors),
        is_user_prose=user_prose,
        **common,
    )


def _cut_strings(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + f"\n… [cut by memhub: {len(value) - limit:,} more characters]"
    if isinstance(value, list):
        return [_cut_strings(item, limit) for item in value]
    if isinstance(value, dict):
        return {key: _cut_strings(item, limit) for key, item in value.items()}
    return value


def _size(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def shrink_entry(obj: dict[str, Any]) -> dict[str, Any]:
    """The entry with long tool output cut (results, `toolUseResult`), so a 10 MB file read
    costs a few KB; EntryError `too_large` when what is left is still over MAX_ENTRY_BYTES."""
    if _size(obj) <= MAX_ENTRY_BYTES:
        return obj
    shrunk = dict(obj)
    if "toolUseResult" in shrunk:
        shrunk["toolUseResult"] = _cut_strings(shrunk["toolUseResult"], MAX_TOOL_OUTPUT)
    message = shrunk.get("message")
    if isinstance(message, dict) and isinstance(message.get("content"), list):
        blocks = []
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") in ("tool_result", "tool_use"):
                block = _cut_strings(block, MAX_TOOL_OUTPUT)
            blocks.append(block)
        shrunk["message"] = {**message, "content": blocks}
    if _size(shrunk) > MAX_ENTRY_BYTES:
        shrunk = _cut_strings(shrunk, MAX_TOOL_OUTPUT)
    if _size(shrunk) > MAX_ENTRY_BYTES:
        raise EntryError("too_large", "the entry is too large even with its tool output cut")
    return shrunk


def _redact(value: Any, hits: list[SecretHit]) -> Any:
    if isinstance(value, str):
        text, found = redact_text(value)
        hits.extend(found)
        return text
    if isinstance(value, list):
        return [_redact(item, hits) for item in value]
    if isinstance(value, dict):
        return {key: _redact(item, hits) for key, item in value.items()}
    return value


def redact_entry(obj: Any) -> tuple[Any, list[SecretHit]]:
    """The entry with every string's secrets (fast rules) replaced by `[REDACTED:<label>]`."""
    hits: list[SecretHit] = []
    return _redact(obj, hits), hits


def _lines(handle: BinaryIO, offset: int, end: int) -> Iterator[tuple[int, bytes | None]]:
    """(end offset, line) of each complete line from `offset`; a line over MAX_LINE_BYTES comes
    as None (its bytes are skipped, never held). A last line without its newline is left for
    the next read: the agent is still writing it."""
    position = offset
    while position < end:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            skipped = len(line)
            while not line.endswith(b"\n"):
                line = handle.readline(1 << 20)
                if not line:
                    return
                skipped += len(line)
            position += skipped
            yield position, None
            continue
        if not line.endswith(b"\n"):
            return
        position += len(line)
        yield position, line


def read_entries(
    path: str | os.PathLike[str],
    offset: int = 0,
    max_bytes: int = MAX_BATCH_BYTES,
    *,
    redact: bool = True,
    convert: Callable[[object], dict[str, Any]] | None = None,
) -> ReadResult:
    """The kept entries of the transcript from byte `offset`, shrunk and redacted, whose JSON
    together stays under `max_bytes`; `offset` of the result is where to continue. `convert`
    turns another agent's line into a Claude Code entry first (docs/design.md §28). Raises
    OSError when the file cannot be read."""
    result = ReadResult(offset=offset)
    budget = max_bytes - 1024  # room for the request's other fields
    with Path(path).open("rb") as handle:
        end = os.fstat(handle.fileno()).st_size
        if offset > end:  # the file was replaced by a shorter one: start again
            offset = result.offset = 0
        handle.seek(offset)
        used = 0
        for line_end, line in _lines(handle, offset, end):
            if line is None:
                result.skipped["too_large"] += 1
                result.offset = line_end
                continue
            try:
                obj = json.loads(line.decode("utf-8"))
                if convert is not None:
                    obj = convert(obj)
                parse_entry(obj)
                obj = shrink_entry(obj)
            except UnicodeDecodeError:
                result.skipped["binary"] += 1
            except ValueError as exc:  # JSONDecodeError or EntryError
                if getattr(exc, "counted", True):
                    result.skipped[getattr(exc, "reason", "not_json")] += 1
            else:
                if redact:
                    obj, hits = redact_entry(obj)
                    result.hits += hits
                size = _size(obj) + 1
                if used + size > budget:
                    result.more = True
                    return result
                used += size
                result.entries.append(obj)
            result.offset = line_end
    return result


def count_turns(entries: Iterable[Entry]) -> int:
    """Turns a person started: user prose of the main agent's conversation."""
    return sum(1 for e in entries if e.is_user_prose and not e.is_sidechain)


def _inside(path: str, directory: str) -> bool:
    path, directory = posixpath.normpath(path), posixpath.normpath(directory)
    return path.startswith(directory.rstrip("/") + "/")


def wrote_memory(entries: Iterable[Entry], memory_dir: str | None) -> bool:
    """Whether the main agent wrote into `memory_dir` itself (a Write, Edit … call whose file
    path lies inside it), as Claude Code checks before it extracts."""
    if not memory_dir:
        return False
    return any(
        tool.name in WRITE_TOOLS and tool.file_path and _inside(tool.file_path, memory_dir)
        for entry in entries
        if not entry.is_sidechain
        for tool in entry.tools
    )


def render_messages(entries: Iterable[Entry]) -> str:
    """The conversation as the extraction request shows it: user and assistant prose, and each
    tool call as one line with its name and a short argument (tool output left out)."""
    lines = []
    for entry in entries:
        if entry.is_sidechain or entry.type not in ("user", "assistant"):
            continue
        if entry.type == "user" and not entry.is_user_prose:
            continue
        if entry.prose:
            lines.append(f"[{entry.type}] {entry.prose}")
        lines += [f"[tool call] {t.name}: {t.argument}" for t in entry.tools]
    return "\n".join(lines)
