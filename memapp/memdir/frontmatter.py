"""Memory files: YAML frontmatter plus a Markdown body (docs/design.md §2).

A topic file looks like::

    ---
    name: Integration tests use a real database
    description: Integration tests must hit a real database, not mocks
    type: feedback
    ---
    Rule or fact.

Reading follows the client's rules: the header starts at byte 0 with a ``---`` line and ends at
the next ``---`` line, which must lie within the first 30 lines; the YAML must be a mapping; on a
YAML error the parse is retried once after quoting simple ``key: value`` lines whose value holds
YAML-special characters. A file whose header cannot be read keeps empty frontmatter and the
reason in ``problem``; nothing about it is dropped.

Choices where the design is silent:

- A UTF-8 byte order mark before the opening ``---`` is skipped (editors on Windows add one) and
  is not part of the body; :func:`render_memory` never writes one.
- CRLF files: delimiter lines may end in ``\\r\\n`` and YAML reads CRLF itself. The body is kept
  exactly as written, line endings included; :func:`render_memory` writes the header with ``\\n``.
- Bytes that are not valid UTF-8 are decoded with U+FFFD replacement characters and the memory
  gets the problem ``"invalid UTF-8"``; bytes containing NUL are not parsed at all
  (``"binary file"``). :func:`parse_memory` accepts ``bytes`` for this (as does the scan, through
  :func:`decode_bytes`); callers passing ``str`` have already decided how to decode.
- Values YAML types (``name: 2026``, ``description: yes``, dates) are read back as the text
  written in the file (``"2026"``, ``"yes"``), not as ``str()`` of the typed value.
- A ``type`` found at top level wins over ``metadata.type``; ``type_form`` names where a ``type``
  key was found even when its value is unknown (so the file's form is still known).
"""

from __future__ import annotations

import codecs
import copy
import datetime
import functools
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import yaml

__all__ = [
    "BINARY_FILE",
    "HEADER_LINES",
    "HEADER_NOT_CLOSED",
    "INVALID_UTF8",
    "MEMORY_TYPES",
    "FrontmatterError",
    "Header",
    "Memory",
    "WIKILINK_RE",
    "TypeForm",
    "decode_bytes",
    "extract_links",
    "parse_header",
    "parse_memory",
    "render_memory",
    "user_memories",
]

MEMORY_TYPES = ("user", "feedback", "project", "reference")
HEADER_LINES = 30

HEADER_NOT_CLOSED = f"header not closed within the first {HEADER_LINES} lines"
INVALID_UTF8 = "invalid UTF-8"
BINARY_FILE = "binary file"

TypeForm = Literal["top", "metadata"]

# libyaml's parser is 5-7x faster than the pure-Python one (measured); both are "safe".
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Retry rule of docs/design.md §2: a simple top-level `key: value` line whose value holds one of
# these.
_RETRY_LINE = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]*):[ \t]+(.*?)[ \t\r]*$", re.MULTILINE)
_YAML_SPECIAL = re.compile(r"[{}\[\]*&#!|>%@`]|: ")

# `[[target]]`, `[[target|label]]`, `[[target#section]]`: the target is what names a memory.
WIKILINK_RE = re.compile(r"\[\[([^\[\]\n]+?)\]\]")

_BOM = "\ufeff"
_SCALARS = (str, int, float, bool, datetime.date)  # datetime.datetime is a date subclass
# Every character str.splitlines() breaks on: a description must stay on one line.
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
# YAML's own line breaks: a scalar holding one is written double-quoted, which escapes it, so
# every value takes exactly one header line.
_YAML_BREAKS = frozenset("\n\x85\u2028\u2029")


class FrontmatterError(ValueError):
    """A memory cannot be written as asked (see :func:`render_memory`)."""


@dataclass(frozen=True, slots=True)
class Header:
    """What the first lines of a memory file say. See :func:`parse_header`."""

    frontmatter: dict[Any, Any]
    name: str | None
    description: str | None
    type: str | None
    type_form: TypeForm | None
    problem: str | None
    has_frontmatter: bool
    body_start: int  # index in the parsed text where the body begins (after the header)


_EMPTY: dict[Any, Any] = {}


def _no_header(body_start: int, problem: str | None = None) -> Header:
    return Header({}, None, None, None, None, problem, False, body_start)


def parse_header(text: str) -> Header:
    """Parse the frontmatter at the start of ``text``.

    ``text`` may be a whole file or only its first lines (the scan passes at most
    :data:`HEADER_LINES` lines); only the first :data:`HEADER_LINES` lines are looked at either
    way. Never raises: a header that cannot be read gives empty frontmatter and a ``problem``.
    """
    start = 1 if text.startswith(_BOM) else 0
    if not text.startswith("---", start):
        return _no_header(start)
    nl = text.find("\n", start)
    if text[start + 3 : nl if nl >= 0 else len(text)].strip(" \t\r"):
        return _no_header(start)  # a first line such as "----" or "--- x" opens no header
    if nl < 0:
        return _no_header(start, HEADER_NOT_CLOSED)

    search = nl
    while True:
        k = text.find("\n---", search)
        # The line starting at k+1 is line number count("\n" before it) + 1.
        if k < 0 or text.count("\n", start, k + 1) >= HEADER_LINES:
            return _no_header(start, HEADER_NOT_CLOSED)
        end = text.find("\n", k + 4)
        if end < 0:
            end = len(text)
        if not text[k + 4 : end].strip(" \t\r"):
            break
        search = k + 1

    body_start = min(end + 1, len(text))
    mapping, raw, problem = _load_mapping(text[nl + 1 : k + 1], start_line=2)
    if mapping is None:
        return Header({}, None, None, None, None, problem, True, body_start)
    return _interpret(mapping, raw, body_start)


def _load_mapping(
    yaml_text: str, start_line: int
) -> tuple[dict[Any, Any] | None, dict[str, str], str | None]:
    """Load the header YAML, retrying once with special values quoted (docs/design.md §2).

    Returns ``(mapping or None, raw text of typed name/description scalars, problem)``. The
    same header text is mostly read again (a rescan after an edit of the body, a pull of a
    teammate's edit, recall's reads): the YAML is loaded once per text (:func:`_remembered`), and
    each caller gets its own copy of what it holds, to change as it likes.
    """
    if len(yaml_text) > _REMEMBERED_CHARS:
        return _load(yaml_text, start_line)
    mapping, raw, problem, flat = _remembered(yaml_text, start_line)
    if mapping is not None:
        mapping = dict(mapping) if flat else copy.deepcopy(mapping)
    return mapping, dict(raw) if raw else _EMPTY, problem


# Headers remembered by their text, each of at most 1,024 characters (a usual one has 100–300):
# about a kilobyte each with what YAML made of it, 16 MB at the very most.
_REMEMBERED_CHARS = 1024
_REMEMBERED_HEADERS = 8192


@functools.lru_cache(maxsize=_REMEMBERED_HEADERS)
def _remembered(
    yaml_text: str, start_line: int
) -> tuple[dict[Any, Any] | None, dict[str, str], str | None, bool]:
    """:func:`_load`, remembered, and whether the mapping holds only values nobody can change
    (a copy of it need not copy them); what it returns is never handed out, only copies."""
    mapping, raw, problem = _load(yaml_text, start_line)
    flat = mapping is not None and all(
        value is None or isinstance(value, _SCALARS) for value in mapping.values()
    )
    return mapping, raw, problem, flat


def _load(
    yaml_text: str, start_line: int
) -> tuple[dict[Any, Any] | None, dict[str, str], str | None]:
    """The YAML of a header loaded, retried once with special values quoted."""
    try:
        data = yaml.load(yaml_text, Loader=_Loader)
    except Exception as exc:  # malformed input must never crash a reader, whatever it raises
        retry = _RETRY_LINE.sub(_quote_line, yaml_text)
        if retry == yaml_text:
            return None, _EMPTY, _yaml_problem(exc, start_line)
        try:
            data = yaml.load(retry, Loader=_Loader)
        except Exception:
            return None, _EMPTY, _yaml_problem(exc, start_line)
        yaml_text = retry
    if data is None:
        return {}, _EMPTY, None
    if not isinstance(data, dict):
        return None, _EMPTY, f"frontmatter is not a mapping (it is {_kind(data)})"
    return data, _raw_scalars(data, yaml_text), None


def _quote_line(match: re.Match[str]) -> str:
    key, value = match.group(1), match.group(2)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return match.group(0)
    if not _YAML_SPECIAL.search(value):
        return match.group(0)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'{key}: "{escaped}"'


def _yaml_problem(exc: Exception, start_line: int) -> str:
    """A one-line reason, with the file's line number where YAML gives one."""
    what = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return f"invalid YAML: {what} (line {mark.line + start_line}, column {mark.column + 1})"
    return f"invalid YAML: {what}"


def _raw_scalars(data: dict[Any, Any], yaml_text: str) -> dict[str, str]:
    """The source text of `name`/`description` values YAML typed (`name: 2026` -> "2026").

    Rare, so the second pass over the YAML costs nothing in the common case.
    """
    typed = [
        key
        for key in ("name", "description")
        if not isinstance(data.get(key, ""), str) and isinstance(data.get(key), _SCALARS)
    ]
    if not typed:
        return _EMPTY
    raw: dict[str, str] = {}
    try:
        node = yaml.compose(yaml_text, Loader=_Loader)
    except Exception:
        return raw
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if key_node.value in typed and isinstance(value_node, yaml.ScalarNode):
                raw[key_node.value] = value_node.value
    return raw


def _interpret(mapping: dict[Any, Any], raw: dict[str, str], body_start: int) -> Header:
    problems: list[str] = []

    def text_field(key: str) -> str | None:
        value = mapping.get(key)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, _SCALARS):
            return raw.get(key, str(value))
        problems.append(f"{key} is {_kind(value)}, not text")
        return None

    name = text_field("name")
    description = text_field("description")

    type_: str | None = None
    form: TypeForm | None = None
    top = mapping.get("type")
    meta = mapping.get("metadata")
    meta_type = meta.get("type") if isinstance(meta, dict) else None
    if top in MEMORY_TYPES:
        type_, form = top, "top"
    elif meta_type in MEMORY_TYPES:
        type_, form = meta_type, "metadata"
    elif "type" in mapping:
        form = "top"
    elif isinstance(meta, dict) and "type" in meta:
        form = "metadata"
    for value, where in ((top, "type"), (meta_type, "metadata.type")):
        if value is not None and not isinstance(value, _SCALARS):
            problems.append(f"{where} is {_kind(value)}, not text")

    return Header(
        mapping,
        name,
        description,
        type_,
        form,
        "; ".join(problems) or None,
        True,
        body_start,
    )


def _kind(value: object) -> str:
    for types, kind in _KINDS:
        if isinstance(value, types):
            return kind
    return f"a {type(value).__name__}"


_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (dict, "a mapping"),
    (list, "a list"),
    (str, "a string"),
    (bool, "a boolean"),  # before int: bool is an int subclass
    ((int, float), "a number"),
    (datetime.date, "a date"),
)


def decode_bytes(data: bytes, final: bool = True) -> tuple[str, str | None]:
    """Decode file bytes as UTF-8: ``(text, problem)``.

    Invalid UTF-8 is replaced with U+FFFD and reported as :data:`INVALID_UTF8`. Bytes holding NUL
    are reported as :data:`BINARY_FILE` (decoded the same way, but not worth parsing). With
    ``final=False`` (a cut-off read) an incomplete character at the very end is dropped rather than
    counted as invalid.
    """
    problem = BINARY_FILE if b"\0" in data else None
    try:
        text = codecs.utf_8_decode(data, "strict", final)[0]
    except UnicodeDecodeError:
        text = codecs.utf_8_decode(data, "replace", final)[0]
        problem = problem or INVALID_UTF8
    return text, problem


def extract_links(body: str) -> tuple[str, ...]:
    """The ``[[name]]`` targets of a body, in order of first appearance, without duplicates.

    ``[[name|label]]`` and ``[[name#section]]`` link to ``name``. Links inside code are not
    treated specially.
    """
    seen: dict[str, None] = {}
    if "[[" in body:
        for match in WIKILINK_RE.finditer(body):
            target = match.group(1).split("|", 1)[0].split("#", 1)[0].strip()
            if target:
                seen.setdefault(target, None)
    return tuple(seen)


@dataclass(frozen=True)
class Memory:
    """One memory file, parsed.

    ``links`` is derived from ``body`` (so ``dataclasses.replace(m, body=...)`` keeps it right).
    ``frontmatter`` is the mapping as read, kept so keys memhub does not know survive a rewrite;
    treat it as read-only. ``problem`` says why the header is empty or partly unusable.
    """

    name: str | None = None
    description: str | None = None
    type: str | None = None
    body: str = ""
    links: tuple[str, ...] = field(init=False)
    type_form: TypeForm | None = None
    frontmatter: dict[Any, Any] = field(default_factory=dict)
    problem: str | None = None
    has_frontmatter: bool = False
    path: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "links", extract_links(self.body))

    @property
    def header_unclosed(self) -> bool:
        """The file starts with ``---`` but no closing line lies within the first 30 lines."""
        return (
            not self.has_frontmatter
            and self.problem is not None
            and (HEADER_NOT_CLOSED in self.problem)
        )


def parse_memory(text: str | bytes, path: str | None = None) -> Memory:
    """Parse a whole memory file. Never raises on malformed content.

    ``bytes`` are decoded with :func:`decode_bytes` (invalid UTF-8 becomes U+FFFD and is noted in
    ``problem``; a file holding NUL is a binary file and its header is not parsed).
    """
    decode_problem = None
    if isinstance(text, bytes):
        text, decode_problem = decode_bytes(text)
    if decode_problem == BINARY_FILE:
        header = _no_header(0, BINARY_FILE)
    else:
        header = parse_header(text)
        if decode_problem:
            header = replace(
                header, problem="; ".join(filter(None, (decode_problem, header.problem)))
            )
    return Memory(
        name=header.name,
        description=header.description,
        type=header.type,
        body=text[header.body_start :],
        type_form=header.type_form,
        frontmatter=header.frontmatter,
        problem=header.problem,
        has_frontmatter=header.has_frontmatter,
        path=path,
    )


class _Dumper(yaml.SafeDumper):
    """Lets the emitter pick each scalar's style, except that line breaks force double quotes."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = '"' if not _YAML_BREAKS.isdisjoint(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)

_MISSING = object()


def render_memory(memory: Memory) -> str:
    """The file text for ``memory``: a frontmatter header, then the body unchanged.

    The header holds ``name``, ``description`` and the type, then every other key of
    ``memory.frontmatter`` in its original order. The type goes where ``memory.type_form`` says
    (top-level ``type:``, or ``metadata:`` written in block style; ``None`` means top-level). An
    absent attribute drops its key, except that values the parser could not use (an unknown type,
    a list given as a name) are written back unchanged. Scalars are plain unless YAML needs
    quotes, and each takes one line (line breaks in a name are escaped); collections are written
    in block style, or in flow style when that is what keeps the header within 30 lines.
    ``parse_memory(render_memory(m))`` gives back the same fields, other keys and body.

    Raises :class:`FrontmatterError` when the description spans several lines, when the type is
    not one of :data:`MEMORY_TYPES`, when the file's existing header is not closed within the
    first 30 lines (writing would add a second header), or when the header cannot fit in them.
    """
    if memory.header_unclosed:
        raise FrontmatterError(
            f"{memory.path or 'this memory'}: {HEADER_NOT_CLOSED}; fix the file by hand "
            "rather than adding a second header"
        )
    if memory.description is not None and not _LINE_BREAKS.isdisjoint(memory.description):
        raise FrontmatterError("description must be one line")

    original = dict(memory.frontmatter)
    top_type = original.pop("type", _MISSING)
    meta = original.pop("metadata", _MISSING)
    meta_type = _MISSING
    if isinstance(meta, dict):
        meta = dict(meta)
        meta_type = meta.pop("type", _MISSING)

    out: dict[Any, Any] = {}
    for key in ("name", "description"):
        value = getattr(memory, key)
        kept = original.pop(key, _MISSING)
        if value is not None:
            out[key] = value
        elif kept is not _MISSING and kept is not None and not isinstance(kept, _SCALARS):
            out[key] = kept

    if memory.type is not None:
        if memory.type not in MEMORY_TYPES:
            raise FrontmatterError(f"unknown memory type {memory.type!r}")
        if memory.type_form == "metadata":
            meta = {"type": memory.type, **(meta if isinstance(meta, dict) else {})}
        else:
            out["type"] = memory.type
    else:
        if top_type is not _MISSING and top_type not in MEMORY_TYPES:
            out["type"] = top_type
        if meta_type is not _MISSING and meta_type not in MEMORY_TYPES:
            meta = {"type": meta_type, **meta}
    if isinstance(meta, dict):
        # Drop a metadata mapping emptied by moving or clearing its type; keep one that was empty.
        if meta or meta_type is _MISSING:
            out["metadata"] = meta
    elif meta is not _MISSING:
        out["metadata"] = meta
    out.update(original)

    header = _dump(out, flow_nested=False)
    if header.count("\n") > HEADER_LINES - 2:
        header = _dump(out, flow_nested=True)
        if header.count("\n") > HEADER_LINES - 2:
            raise FrontmatterError(f"frontmatter would not fit in {HEADER_LINES} lines")
    return f"---\n{header}---\n{memory.body}"


def _dump(mapping: dict[Any, Any], flow_nested: bool) -> str:
    """YAML for the header mapping, in block style; ``flow_nested`` puts each top-level value on
    one line (``tags: [a, b]``, ``metadata: {type: user}``)."""
    if not mapping:
        return ""
    stream = io.StringIO()
    dumper = _Dumper(
        stream, default_flow_style=False, sort_keys=False, allow_unicode=True, width=float("inf")
    )
    try:
        dumper.open()
        node = dumper.represent_data(mapping)
        if flow_nested:
            for _key, value in node.value:
                if isinstance(value, yaml.CollectionNode):
                    value.flow_style = True
        dumper.serialize(node)
        dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


def user_memories(files: Mapping[str, str | bytes]) -> list[str]:
    """The keys of `files` whose header says `type: user`: memories about a person, which stay
    in their private memory unless that person explicitly shares them (docs/design.md §14.12)."""
    return [key for key, text in files.items() if parse_memory(text, path=key).type == "user"]
