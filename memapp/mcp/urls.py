from django.http import HttpRequest, HttpResponse
from django.urls import path, re_path
from django.views.decorators.csrf import csrf_exempt

from memapp.mcp.metadata import protected_resource_metadata


@csrf_exempt  # a token, never a cookie, authenticates it
def mcp_endpoint(request: HttpRequest, **kwargs: str) -> HttpResponse:
    """`/mcp`, its SDK imported by the first MCP request instead of with the URLconf: that
    import is most of a second of every process that loads the URLconf (each server worker,
    every `manage.py` command's checks)."""
    from memapp.mcp.views import mcp_endpoint as endpoint

    return endpoint(request, **kwargs)


urlpatterns = [
    # One name with or without the slash: token scopes know the endpoint by it.
    re_path(r"^mcp/?$", mcp_endpoint, name="mcp"),
    re_path(r"^mcp/(?P<project>[^/].*?)/?$", mcp_endpoint, name="mcp_project"),
    path(
        ".well-known/oauth-protected-resource",
        protected_resource_metadata,
        name="mcp_resource_metadata",
    ),
    re_path(
        r"^\.well-known/oauth-protected-resource/(?P<resource>mcp(?:/.*)?)$",
        protected_resource_metadata,
    ),
]
