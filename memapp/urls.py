from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from memapp.api import errors as api_errors
from memapp.web.views import errors as web_errors

urlpatterns = [
    # First: agents' requests are the hot path, and every pattern before theirs is tried on
    # each. Its catch-all 404 takes only paths under api/, where no page lives.
    path("", include("memapp.api.urls")),
    path("admin/", admin.site.urls),
    path("", include("memapp.mcp.urls")),
    path("", include("memapp.web.urls")),
]

# The API answers 403 and 404 itself (its exception handler and catch-all); a crash anywhere
# reaches handler500, which keeps the API's JSON error shape under /api/.
handler403 = web_errors.permission_denied
handler404 = web_errors.page_not_found


def handler500(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return api_errors.server_error(request)
    return web_errors.server_error(request)
