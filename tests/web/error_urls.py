"""The site's URLs plus pages that fail, to see the error pages a person would get."""

from django.core.exceptions import PermissionDenied
from django.urls import path

from memapp.urls import handler403, handler404, handler500, urlpatterns

__all__ = ["handler403", "handler404", "handler500", "urlpatterns"]


def crash(request):
    raise RuntimeError("a bug")


def forbidden(request):
    raise PermissionDenied


urlpatterns = [
    path("crash/", crash),
    path("forbidden/", forbidden),
    path("api/v1/crash", crash),
    *urlpatterns,
]
