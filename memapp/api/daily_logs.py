"""Daily logs through the agent API (docs/design.md §14.8): append an entry to today's log,
list a store's logs, read one, and merge an agent's copy (what `memhub-agent sync` does).
Only the token owner's own private store keeps logs; anything else is a 404."""

from __future__ import annotations

import datetime

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import daily_log_serializers as s
from memapp.api.errors import ApiError
from memapp.lifecycle.daily_logs import (
    do_append_daily_log,
    do_merge_daily_log,
    has_logs,
    log_checksum,
    read_store_log,
    store_logs,
)
from memapp.memdir.daily_logs import daily_log_path
from memapp.stores.access import get_store_for_user
from memapp.stores.models import Store
from memapp.stores.projects import resolve_store

APPEND_EXAMPLE = OpenApiExample(
    "A feedback entry",
    value={
        "project": "acme/app",
        "text": "Integration tests must hit a real database. Why: mocks hid a broken migration.",
        "date": "2026-03-05",
        "time": "14:05",
        "type": "feedback",
    },
    request_only=True,
)
MERGE_EXAMPLE = OpenApiExample(
    "The agent's copy of a day",
    value={"lines": ["- 09:05 [project] Code freeze starts 2026-03-10.", "- 14:05 Demo went well"]},
    request_only=True,
)


def _log_store(user, store_id: int) -> Store:
    store = get_store_for_user(user, store_id)
    if not has_logs(store) or store.owner_id != user.pk:
        raise ApiError(404, "not_found", "This store keeps no daily logs.")
    return store


@extend_schema(
    operation_id="appendLog",
    summary="Append an entry to today's daily log",
    tags=["daily logs"],
    request=s.LogAppendSerializer,
    examples=[APPEND_EXAMPLE],
    responses=s.LogAppendResultSerializer,
)
@api_view(["POST"])
def append_log(request: Request) -> Response:
    """Append `- HH:MM [type] text` to `logs/YYYY/MM/YYYY-MM-DD.md` of the caller's private
    store of the project, `date` being today in the agent's time zone. A line over 4 KB, on
    several lines or with a secret is refused with the reason; nothing is written then."""
    serializer = s.LogAppendSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    data = serializer.validated_data
    store = resolve_store(request.user, data["project"], "private", alias=data["project_dirname"])
    appended = do_append_daily_log(
        store,
        request.user,
        text=data["text"],
        day=data["date"],
        at=data["time"] or None,
        memory_type=data["type"] or None,
    )
    return Response(
        {
            "store": store.pk,
            "key": appended.key,
            "line": appended.line,
            "checksum": appended.checksum,
        }
    )


@extend_schema(
    operation_id="listLogs",
    summary="List a store's daily logs",
    tags=["daily logs"],
    responses=s.LogListSerializer,
)
@api_view(["GET"])
def log_list(request: Request, store_id: int) -> Response:
    """Every daily log of the store, newest first, with its checksum and entry count."""
    store = _log_store(request.user, store_id)
    return Response(
        {
            "logs": [
                {"key": d.key, "day": d.day, "checksum": d.checksum, "entries": len(d.entries)}
                for d in store_logs(store)
            ]
        }
    )


@extend_schema(
    methods=["GET"],
    operation_id="getLog",
    summary="Read a daily log",
    tags=["daily logs"],
    responses=s.LogTextSerializer,
)
@extend_schema(
    methods=["POST"],
    operation_id="mergeLog",
    summary="Merge an agent's copy of a daily log",
    tags=["daily logs"],
    request=s.LogMergeSerializer,
    examples=[MERGE_EXAMPLE],
    responses=s.LogMergeResultSerializer,
)
@api_view(["GET", "POST"])
def log_detail(request: Request, store_id: int, day: str) -> Response:
    """The log of `day` (YYYY-MM-DD). GET: its text. POST: append the given lines it lacks (a
    line written twice on purpose stays twice); one bad line refuses them all, naming it."""
    store = _log_store(request.user, store_id)
    try:
        key = daily_log_path(datetime.date.fromisoformat(day))
    except ValueError:
        raise ApiError(400, "invalid", f"{day[:20]!r} is not a date (YYYY-MM-DD)") from None
    if request.method == "GET":
        data = read_store_log(store, key)
        if data is None:
            raise ApiError(404, "not_found", "No such daily log.")
        content = data.decode("utf-8", "replace")
        return Response({"key": key, "content": content, "checksum": log_checksum(data)})
    serializer = s.LogMergeSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    merged = do_merge_daily_log(store, request.user, key, serializer.validated_data["lines"])
    return Response({"key": key, "appended": merged.appended, "checksum": merged.checksum})
