"""Agent API: remember and forget a memory by its fields (the topic file and its MEMORY.md line
together), through `memapp.stores.actions`."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import examples
from memapp.api import serializers as s
from memapp.api.errors import ApiError
from memapp.memdir.frontmatter import FrontmatterError
from memapp.stores.access import get_store_for_user
from memapp.stores.actions import (
    do_forget_memory,
    do_save_memory,
    store_file_path,
)
from memapp.stores.models import Store
from memapp.stores.projects import resolve_store


def _store_from(user, data) -> Store:
    if "store" in data:
        return get_store_for_user(user, data["store"])
    return resolve_store(user, data["project"], data["scope"])


@extend_schema(
    operation_id="remember",
    summary="Remember something (write a memory and its index line)",
    tags=["memories"],
    request=s.RememberSerializer,
    examples=[examples.REMEMBER],
    responses={201: s.RememberResultSerializer},
)
@api_view(["POST"])
def remember(request: Request) -> Response:
    """Create or replace a memory from its fields: the topic file and its MEMORY.md line."""
    data = s.validated(s.RememberSerializer, request.data)
    store = _store_from(request.user, data)
    try:
        file = do_save_memory(
            store,
            request.user,
            name=data["name"],
            description=data["description"],
            memory_type=data.get("type"),
            body=data["body"],
            path=data.get("path"),
            via="api",
        )
    except FileNotFoundError:
        raise Http404 from None
    except FrontmatterError as exc:
        raise ApiError(400, "invalid_memory", str(exc)) from exc
    return Response(
        {"store": store.pk, "key": file.path, "checksum": file.checksum},
        status=status.HTTP_201_CREATED,
    )


@extend_schema(
    operation_id="forget",
    summary="Forget a memory",
    tags=["memories"],
    request=s.ForgetSerializer,
    examples=[examples.FORGET],
    responses={204: None},
)
@api_view(["POST"])
def forget(request: Request) -> Response:
    """Delete a memory's file and its MEMORY.md line."""
    data = s.validated(s.ForgetSerializer, request.data)
    store = _store_from(request.user, data)
    if not store_file_path(store, data["path"]).is_file():
        raise Http404
    do_forget_memory(store, request.user, data["path"], via="api")
    return Response(status=status.HTTP_204_NO_CONTENT)
