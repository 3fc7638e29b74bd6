"""The site's own package index for memhub-agent (`/client/simple/`, PEP 503), so the install
command on Connect your agent works with no internet (docs/design.md §26). Open to anyone: it
is the client's code and public packages, needed before the person has logged in anywhere."""

from __future__ import annotations

from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memapp.web.client_package import client_wheels, normalize


def _wheels():
    return client_wheels(settings.MEMHUB_DATA_DIR / "client-wheels")


@require_GET
def index(request: HttpRequest) -> HttpResponse:
    projects = sorted({wheel.project for wheel in _wheels()})
    return render(request, "memapp/client_index.html", {"projects": projects})


@require_GET
def project(request: HttpRequest, name: str) -> HttpResponse:
    wheels = [wheel for wheel in _wheels() if wheel.project == normalize(name)]
    if not wheels:
        raise Http404("No such project in this index.")
    return render(request, "memapp/client_index.html", {"project": name, "wheels": wheels})


@require_GET
def wheel_file(request: HttpRequest, filename: str) -> FileResponse:
    for wheel in _wheels():
        if wheel.path.name == filename:
            return FileResponse(wheel.path.open("rb"), as_attachment=True, filename=filename)
    raise Http404("No such file in this index.")
