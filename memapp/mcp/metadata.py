"""The RFC 9728 metadata of `/mcp`: which token a client brings (docs/design.md §27). Apart
from the endpoint, so answering it never loads the MCP SDK."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

METADATA_PATH = "/.well-known/oauth-protected-resource"


@require_GET
def protected_resource_metadata(request: HttpRequest, resource: str = "mcp") -> JsonResponse:
    """RFC 9728 metadata of `/mcp` (and of its path forms): a bearer token in the header,
    made on memhub's API tokens page (memhub is its own authorization server, without OAuth)."""
    return JsonResponse(
        {
            "resource": request.build_absolute_uri("/" + resource.strip("/")),
            "bearer_methods_supported": ["header"],
            "resource_name": "memhub",
            "resource_documentation": request.build_absolute_uri("/api/docs/"),
        }
    )
