"""One error shape for the whole API: `{"error": {"code", "message", "details"}}`
(docs/design.md §15)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import exception_handler

from memapp.memdir.store_files import FileRejected
from memapp.stores.projects import NoProject


class ApiError(exceptions.APIException):
    """An error with a stable machine-readable code and optional details."""

    def __init__(self, status_code: int, code: str, message: str, details=None) -> None:
        super().__init__(message, code)
        self.status_code = status_code
        self.error_code = code
        self.details = details or {}


_CODES = {
    status.HTTP_400_BAD_REQUEST: "bad_request",
    status.HTTP_401_UNAUTHORIZED: "unauthorized",
    status.HTTP_403_FORBIDDEN: "forbidden",
    status.HTTP_404_NOT_FOUND: "not_found",
    status.HTTP_405_METHOD_NOT_ALLOWED: "method_not_allowed",
    status.HTTP_406_NOT_ACCEPTABLE: "not_acceptable",
    status.HTTP_413_REQUEST_ENTITY_TOO_LARGE: "too_large",
    status.HTTP_415_UNSUPPORTED_MEDIA_TYPE: "unsupported_media_type",
    status.HTTP_429_TOO_MANY_REQUESTS: "throttled",
}


# The HTTP status of each code a refused write carries (`FileRejected`); any other is a 400.
_REFUSAL_STATUS = {
    "precondition_failed": status.HTTP_412_PRECONDITION_FAILED,
    "entry_too_large": status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    "team_memory_too_many_entries": status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    "secret_detected": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "team_memory_secret_detected": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "auto_memory_off": status.HTTP_403_FORBIDDEN,
    "read_only": status.HTTP_403_FORBIDDEN,
    "team_memory_user_memory": status.HTTP_422_UNPROCESSABLE_ENTITY,
    "user_memory_private": status.HTTP_422_UNPROCESSABLE_ENTITY,
}


def status_for(code: str) -> int:
    """The HTTP status of a refused write's code."""
    return _REFUSAL_STATUS.get(code, status.HTTP_400_BAD_REQUEST)


def error_body(code: str, message: str, details=None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def api_exception_handler(exc, context):
    """Every API error as `{"error": {"code", "message", "details"}}` (docs/design.md §15)."""
    if isinstance(exc, FileRejected):
        exc = ApiError(status_for(exc.code), exc.code, str(exc), exc.details)
    elif isinstance(exc, NoProject):
        exc = ApiError(404, "no_project", str(exc))
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.NotFound("Not found.")  # never leak that something exists
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        body = error_body(exc.error_code, str(exc.detail), exc.details)
    elif isinstance(exc, exceptions.ValidationError):
        body = error_body("invalid", "The request is not valid.", exc.detail)
    else:
        code = _CODES.get(response.status_code, "error")
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        body = error_body(code, str(detail))
    headers = {k: v for k, v in response.items() if k.lower() != "content-type"}
    return Response(body, status=response.status_code, headers=headers)


def server_error(request) -> JsonResponse:
    """Django's 500 handler for API paths: the API's error shape, never an HTML page."""
    body = error_body("server_error", "The server failed to answer; the error is in its log.")
    return JsonResponse(body, status=500)


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE"])
def not_found(request: Request, rest: str = "") -> Response:
    """Any other URL under /api/: a 404 in the API's error shape, not the site's page."""
    raise Http404
