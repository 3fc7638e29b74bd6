from django.urls import path, re_path

from memapp.mcp import views

urlpatterns = [
    path("mcp", views.mcp_endpoint, name="mcp"),
    path("mcp/", views.mcp_endpoint),
    re_path(r"^mcp/(?P<project>[^/].*?)/?$", views.mcp_endpoint, name="mcp_project"),
    path(
        ".well-known/oauth-protected-resource",
        views.protected_resource_metadata,
        name="mcp_resource_metadata",
    ),
    re_path(
        r"^\.well-known/oauth-protected-resource/(?P<resource>mcp(?:/.*)?)$",
        views.protected_resource_metadata,
    ),
]
