"""`/mcp`: the SDK's Streamable HTTP handler behind memhub's token authentication and throttle,
and the RFC 9728 metadata that tells a client which token to bring (docs/design.md §27).

memhub runs under a WSGI server, so the view hands the request to the SDK's stateless session
manager as one ASGI call under `async_to_sync` and returns what it answered: each request is
self-contained (any server worker answers any request), and the tools' work comes back to
this thread through `sync_to_async`.
"""

from __future__ import annotations

import anyio
from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework.request import Request
from rest_framework.views import APIView

from memapp.api.auth import BearerTokenAuthentication
from memapp.mcp.metadata import METADATA_PATH
from memapp.mcp.server import server
from memapp.mcp.tools import CALLER, Caller

SESSION_HEADER = "X-Memhub-Session"  # memhub-agent mcp's process: the recall budget's session
# Host and Origin are Django's to check (ALLOWED_HOSTS); every request carries a token.
SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)
HOP_BY_HOP = {"connection", "transfer-encoding", "content-length", "keep-alive"}


class McpTokenAuthentication(BearerTokenAuthentication):
    """The API's bearer tokens; a 401 names the protected-resource metadata (RFC 9728)."""

    def authenticate_header(self, request) -> str:
        url = request.build_absolute_uri(METADATA_PATH + request.path.rstrip("/"))
        return f'Bearer realm="memhub", resource_metadata="{url}"'


def _scope(request: HttpRequest) -> dict:
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "server": (request.get_host(), int(request.get_port())),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }


async def _serve(scope: dict, body: bytes) -> tuple[int, list, bytes]:
    """One ASGI exchange with the SDK's stateless manager: (status, headers, body)."""
    manager = StreamableHTTPSessionManager(
        # The low-level server the MCPServer wraps: what the manager serves.
        app=server._lowlevel_server,
        json_response=True,
        stateless=True,
        security_settings=SECURITY,
        max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
    )
    answered = anyio.Event()
    status, headers, chunks = 500, [], []
    sent_body = False

    async def receive() -> dict:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                answered.set()

    async with manager.run():
        # A request the SDK never finishes answering (a stream) must not hold a worker forever.
        with anyio.move_on_after(settings.MEMHUB_MCP_TIMEOUT):
            await manager.handle_request(scope, receive, send)
    if not answered.is_set():
        return 504, [], b""
    return status, headers, b"".join(chunks)


def _jsonrpc_error(status: int, message: str, headers=None) -> JsonResponse:
    """An HTTP error as a JSON-RPC error body too, so an MCP client shows its sentence."""
    error = {"code": -32600, "message": message}
    return JsonResponse(
        {"jsonrpc": "2.0", "id": None, "error": error}, status=status, headers=headers or {}
    )


@extend_schema(exclude=True)  # JSON-RPC, described by tools/list, not by the REST schema
class McpEndpoint(APIView):
    """The MCP endpoint; `project` is the path form's `<owner>/<repo>` (a default for tools).
    Authentication and the throttle are the API's; their refusals keep their status and
    headers (`WWW-Authenticate`, `Retry-After`) with a JSON-RPC error as the body."""

    authentication_classes = [McpTokenAuthentication]

    def perform_content_negotiation(self, request, force=False):
        # The SDK judges a request's Accept (and a GET's text/event-stream gets its 405), not
        # DRF: its 406 came before either.
        return super().perform_content_negotiation(request, force=True)

    def handle_exception(self, exc):
        response = super().handle_exception(exc)
        error = (response.data or {}).get("error", {}) if isinstance(response.data, dict) else {}
        headers = {
            name: response[name] for name in ("WWW-Authenticate", "Retry-After") if name in response
        }
        return _jsonrpc_error(response.status_code, error.get("message", "Refused."), headers)

    def post(self, request: Request, project: str = "") -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if length > limit:
            return _jsonrpc_error(413, f"Request body is {length:,} bytes; the limit is {limit:,}.")
        django_request = request._request
        caller = Caller(
            user=request.user,
            token=request.auth,
            project=project.strip("/"),
            session_id=request.headers.get(SESSION_HEADER, "")[:200],
            site_url=request.build_absolute_uri("/"),
        )
        reset = CALLER.set(caller)
        try:
            status, headers, body = async_to_sync(_serve)(
                _scope(django_request), django_request.body
            )
        finally:
            CALLER.reset(reset)
        if status == 504:
            return _jsonrpc_error(504, "memhub's MCP server did not finish answering in time.")
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.decode("latin-1").lower() not in HOP_BY_HOP:
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response

    def get(self, request: Request, project: str = "") -> HttpResponse:
        """No stream to listen on: the MCP spec's answer for a server without one is 405
        (the SDK's stateless manager kept a GET open until the timeout, then a 504)."""
        return _jsonrpc_error(
            405,
            "memhub's MCP server has no stream to listen on: POST requests to it.",
            {"Allow": "POST, DELETE"},
        )

    delete = post  # the SDK answers it


mcp_endpoint = McpEndpoint.as_view()
