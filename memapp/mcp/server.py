"""The MCP server object: tools with their schemas, descriptions and hints, the stores' files
as resources and the memory section of the system prompt as a prompt (docs/design.md §27).

Each handler is async for the SDK and hands its work to the synchronous function in
`memapp.mcp.tools` with `sync_to_async`: the view runs the SDK under `async_to_sync`, so that
work runs back in the request's own thread, with its database connection.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from asgiref.sync import sync_to_async
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import Resource, ToolAnnotations
from pydantic import Field, ValidationError

from memapp.mcp import tools

INSTRUCTIONS = (
    "memhub is this team's memory. Call `recall` with the user's request before you answer "
    "to get the saved memories that fit it; save what is worth keeping across sessions with "
    "`memory` (paths under /memories, team memory under /memories/team); `search` finds "
    "past sessions; `log` notes a line in today's daily log."
)
Project = Annotated[
    str | None,
    Field(description="The repository's owner/name; not needed at /mcp/<owner>/<repo>/."),
]


class MemhubMCP(MCPServer):
    """An MCPServer whose resources are the caller's, listed and read per request, and whose
    refusal of a tool's arguments names each field and what is wrong with it."""

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(map(str, error['loc'])) or 'the arguments'}: {error['msg']}"
                for error in exc.__cause__.errors(include_url=False)
            )  # the SDK's text is pydantic's, model names and documentation links included
            raise ToolError(
                f"{name} was called with arguments it cannot take: {problems}"
            ) from None

    async def list_resources(self) -> list[Resource]:
        found = await sync_to_async(tools.resources)()
        return [
            Resource(uri=uri, name=name, description=description or None, mime_type="text/markdown")
            for uri, name, description in found
        ]

    async def read_resource(self, uri, context=None) -> Iterable[ReadResourceContents]:
        try:
            text = await sync_to_async(tools.read_resource)(str(uri))
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        return [ReadResourceContents(content=text, mime_type="text/markdown")]


def in_request_thread(fn: Callable[..., str]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def handler(**kwargs: Any) -> str:
        return await sync_to_async(fn)(**kwargs)

    return handler


# No `subscriptions/listen`: a sessionless server answers each request in a worker and has no
# stream to push list changes on, so it must not advertise `listChanged` (Claude Code waits
# about 27 s for a listen stream it was promised before it lists the tools).
server = MemhubMCP(name="memhub", instructions=INSTRUCTIONS, subscriptions=False)


@server.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    structured_output=False,
)
@in_request_thread
def recall(
    query: Annotated[str, Field(min_length=1, description="What the user asked, in their words.")],
    recent_tools: Annotated[
        list[str], Field(description="Tools used just now (their docs are skipped).")
    ] = [],  # noqa: B006 (the SDK builds the schema from it; never mutated)
    already_surfaced: Annotated[
        list[str], Field(description="Memory paths already shown in this session.")
    ] = [],  # noqa: B006
    project: Project = None,
    session_id: Annotated[
        str | None, Field(description="Your session id, so a memory is shown once per session.")
    ] = None,
) -> str:
    """Recall the saved memories that fit a request: call it before answering."""
    return tools.recall(query, recent_tools, already_surfaced, project, session_id)


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
@in_request_thread
def search(
    query: Annotated[str, Field(min_length=1, description="Words that must all appear.")],
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> str:
    """Search your memories and past sessions for words (what was said or decided before)."""
    return tools.search(query, limit)


@server.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    structured_output=False,
)
@in_request_thread
def memory(
    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"],
    path: Annotated[
        str | None, Field(description="/memories/<file>.md, or /memories/team/<file>.md")
    ] = None,
    file_text: Annotated[str | None, Field(description="create: the whole file.")] = None,
    old_str: Annotated[str | None, Field(description="str_replace: text found once.")] = None,
    new_str: Annotated[str | None, Field(description="str_replace: its replacement.")] = None,
    insert_line: Annotated[int | None, Field(description="insert: after this line (0: top).")] = (
        None
    ),
    insert_text: Annotated[str | None, Field(description="insert: the text.")] = None,
    view_range: Annotated[
        list[int] | None, Field(description="view: [first, last] line (-1: the end).")
    ] = None,
    old_path: Annotated[str | None, Field(description="rename: the file now.")] = None,
    new_path: Annotated[str | None, Field(description="rename: its new path.")] = None,
    project: Project = None,
) -> str:
    """View, create, edit, delete or rename memory files under /memories (team: /memories/team)."""
    return tools.memory(
        command,
        path,
        file_text,
        old_str,
        new_str,
        insert_line,
        insert_text,
        view_range,
        old_path,
        new_path,
        project,
    )


@server.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    structured_output=False,
)
@in_request_thread
def log(
    text: Annotated[str, Field(min_length=1, max_length=4096, description="One line.")],
    type: Annotated[
        Literal["user", "feedback", "project", "reference"] | None,
        Field(description="The kind of memory it may become."),
    ] = None,
    date: Annotated[
        str | None, Field(description="Your local date, YYYY-MM-DD (default: today).")
    ] = None,
    project: Project = None,
) -> str:
    """Append one line to today's daily log (distilled into memories later, after review)."""
    return tools.log(text, type, date, project)


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
@in_request_thread
def proposals() -> str:
    """List the memory changes waiting for your review, with where to approve them."""
    return tools.proposals()


@server.prompt(name="memory", description="The memory section of the system prompt.")
@in_request_thread
def memory_prompt(project: str | None = None) -> str:
    return tools.prompt_text(project)
