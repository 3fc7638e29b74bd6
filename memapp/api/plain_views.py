"""Recall and the prompt, an agent's requests on every prompt, answered without DRF's request
machinery (docs/design.md §21).

DRF's dispatch (its request wrapper, content negotiation, the authentication, permission and
throttle classes, the renderer's response) cost each recall more CPU than the recall itself.
`plain` answers the usual request of an agent (a bearer token, a JSON body, JSON accepted) with
the same steps in the same order, by the same functions: the token checked on every request
(`token_row`), the throttle's bucket spent (`TokenRateThrottle.spend`), the body parsed by the
API's parser and checked by the endpoint's serializer (quickly when plainly valid:
memapp.api.quick_checks), errors shaped by the API's handler, the
same headers. Any other request (another method, another or no `Authorization`, another
content type or `Accept`, `?format=`) goes to the DRF view as it is, before anything was done
for it; that view also stays what the OpenAPI schema describes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from django.core.exceptions import SuspiciousOperation
from django.core.handlers.wsgi import get_bytes_from_wsgi
from django.http import HttpRequest, HttpResponse, QueryDict
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer

from memapp.api import recall
from memapp.api import serializers as s
from memapp.api.auth import (
    AUTHENTICATE_HEADER,
    TokenRateThrottle,
    may_write,
    throttle_key,
    token_row,
)
from memapp.api.errors import api_exception_handler
from memapp.api.parsers import BoundedJSONParser
from memapp.api.quick_checks import quick_validated
from memapp.stores.recall import session_key
from memapp.stores.tokens import hash_token

__all__ = ["plain", "plain_prompt", "plain_recall"]

# The `Accept` headers the API's only renderer answers as it is (a media type parameter such
# as `indent=4` changes DRF's rendering: left to DRF).
_PLAIN_ACCEPT = frozenset({"", "*/*", "application/json"})
_renderer = JSONRenderer()


def _bearer_token(meta: dict) -> str | None:
    """The token of a well-formed `Authorization: Bearer <token>` (split as DRF splits it), or
    None for anything else, which DRF's authentication answers."""
    parts = meta.get("HTTP_AUTHORIZATION", "").encode("iso-8859-1").split()
    if len(parts) != 2 or parts[0].lower() != b"bearer" or not parts[1].isascii():
        return None
    return parts[1].decode("ascii")


def _is_plain(meta: dict, methods: frozenset[str]) -> bool:
    """Whether `plain` answers a request with these WSGI variables as the DRF view would: a
    well-formed bearer token, and nothing but the request line and headers looked at."""
    method = meta["REQUEST_METHOD"].upper()  # as Django's request reads it
    if method not in methods or meta.get("HTTP_ACCEPT", "") not in _PLAIN_ACCEPT:
        return False
    if _bearer_token(meta) is None:
        return False
    if meta.get("QUERY_STRING") and (method == "POST" or _asks_format(meta)):
        return False  # `?format=` is DRF's URL_FORMAT_OVERRIDE (a POST takes no query)
    if method == "POST":
        length = meta.get("CONTENT_LENGTH") or "0"
        return (
            meta.get("CONTENT_TYPE") == "application/json" and length.isascii() and length.isdigit()
        )
    return True


def _asks_format(meta: dict) -> bool:
    """Whether the query names `format`, read as Django reads `request.GET`; a query Django
    refuses (too many fields) is DRF's view's to answer, with Django's 400."""
    try:
        return "format" in QueryDict(get_bytes_from_wsgi(meta, "QUERY_STRING", ""))
    except SuspiciousOperation:
        return True


def _json(data, status: int = 200, headers: dict[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(_renderer.render(data), status=status, content_type="application/json")
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _error(exc: Exception) -> HttpResponse:
    """The API's error answer to `exc`, as DRF's `handle_exception` makes it; what the API's
    handler does not take is raised again (a 500, as from DRF)."""
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        exc.auth_header = AUTHENTICATE_HEADER  # type: ignore[attr-defined]
    answer = api_exception_handler(exc, {})
    if answer is None:
        raise exc
    headers = {name: value for name, value in answer.items() if name.lower() != "content-type"}
    return _json(answer.data, answer.status_code, headers)


def _body(request: HttpRequest):
    """The JSON body as DRF's request parses it: read from the request's stream, by the API's
    parser; no body (a length of 0) is `{}`."""
    if int(request.META.get("CONTENT_LENGTH") or 0) == 0:
        return {}
    return BoundedJSONParser().parse(request)


_UNREAD = object()  # the body is read in its turn (a JSON `null` body reads as None)


def _early_body(request: HttpRequest, known_user: bool):
    """The body, read before the token is checked when its user is known to this process
    (never for a stranger's request: DRF reads nothing before), so that what it names is read
    with the warm stamp; a body that does not parse is refused in its turn, after the token
    and the throttle. `_UNREAD`: read it in its turn."""
    if request.method != "POST":
        return request.GET.dict()
    if not known_user or int(request.META.get("CONTENT_LENGTH") or 0) > EARLY_BODY_BYTES:
        return _UNREAD
    try:
        return _body(request)
    except Exception as exc:
        return exc


# An agent's recall is a few KB; a larger body waits for its token to be checked.
EARLY_BODY_BYTES = 64 * 1024
# Each token's user, as its authentication found it (a token never changes hands): the key of
# what a request reads ahead depends on it. A stale or missing entry only means nothing is read
# ahead (the key differs from the one the view asks for).
_token_users: dict[str, int] = {}
MAX_TOKENS = 10_000


def plain(
    drf_view: Callable,
    serializer: type[s.StrictSerializer],
    answer: Callable[..., dict],
    ahead: Callable[[int, object], list[str]] = lambda user_pk, data: [],
) -> Callable:
    """`drf_view` answered here, in the usual case, by `answer(user, validated data,
    may_write=…)`.
    `ahead(user_pk, body)`: the shared state `answer` will read (memapp.stores.warm.read_ahead),
    read with the warm stamp."""
    view_class = drf_view.cls  # type: ignore[attr-defined]
    methods = frozenset(view_class.http_method_names) - {"options"}
    methods = frozenset(name.upper() for name in methods)
    # As DRF's view sets them on every answer (the order of `Allow` is its own, per process).
    headers = view_class().default_response_headers

    def view(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not _is_plain(request.META, methods):
            return drf_view(request, *args, **kwargs)
        token = _bearer_token(request.META) or ""  # there is one: the request is plain
        token_hash = hash_token(token)
        user_pk = _token_users.get(token_hash)
        data = _early_body(request, user_pk is not None)
        try:
            keys = ahead(user_pk, data) if user_pk is not None else []
            row = token_row(token, request.META.get("HTTP_USER_AGENT", ""), keys)
            if len(_token_users) >= MAX_TOKENS:
                _token_users.clear()
            _token_users[token_hash] = row.user_id
            request.user = row.user
            throttle = TokenRateThrottle()
            if throttle.rate is not None and not throttle.spend(throttle_key(token_hash)):
                raise exceptions.Throttled(throttle.wait())
            if isinstance(data, Exception):
                raise data
            if data is _UNREAD:
                data = _body(request)
            valid = quick_validated(serializer, data)
            if valid is None:
                valid = s.validated(serializer, data)
            response = _json(answer(row.user, valid, may_write=may_write(row)))
        except Exception as exc:
            response = _error(exc)
        for name, value in headers.items():
            response[name] = value
        return response

    view.answers_here = partial(_is_plain, methods=methods)  # type: ignore[attr-defined]
    # What Django's CSRF check and the schema generator look for on DRF's view.
    view.csrf_exempt = True  # type: ignore[attr-defined]
    view.cls = view_class  # type: ignore[attr-defined]
    view.initkwargs = drf_view.initkwargs  # type: ignore[attr-defined]
    view.__name__ = view.__qualname__ = drf_view.__name__
    view.__doc__ = drf_view.__doc__
    return view


plain_prompt = plain(recall.prompt, s.PromptSerializer, recall.prompt_answer)


def _recall_ahead(user_pk: int, data) -> list[str]:
    """A recall's session state, which it reads first."""
    session_id = data.get("session_id") if isinstance(data, dict) else None
    return [session_key(user_pk, session_id)] if isinstance(session_id, str) and session_id else []


plain_recall = plain(recall.recall, s.RecallSerializer, recall.recall_answer, _recall_ahead)
