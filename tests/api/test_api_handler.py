"""An agent's usual recall and prompt pass through memapp.wsgi's plain API handler, without the
browser's middleware (settings.PAGE_MIDDLEWARE), and are answered exactly as through the whole
chain: the same status, headers and body, for the usual request and each error; any other
request takes the whole chain."""

from __future__ import annotations

import json
import time

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.signals import request_finished
from django.test import RequestFactory

from memapp import wsgi
from memapp.api.auth import throttle_key
from memapp.stores.projects import resolve_store
from memapp.stores.tokens import do_create_api_token, do_revoke_api_token, hash_token
from tests.api.conftest import GOOD, PROMPT, RECALL, agent_request, answer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_process_requests")]


@pytest.fixture(autouse=True)
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""


def environ(path: str, *args, **kwargs) -> dict:
    """A request's WSGI variables (`agent_request`'s)."""
    return agent_request(path, *args, **kwargs).environ


def both(path: str, *args, **kwargs):
    """The answer through the whole chain and through `memapp.wsgi.application`, and whether
    the latter took the plain API handler."""
    whole = answer(wsgi.pages, environ(path, *args, **kwargs))
    variables = environ(path, *args, **kwargs)
    plain = wsgi.plain_request(variables)
    return whole, answer(wsgi.application, variables), plain


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_the_page_middleware_named_is_in_the_chain():
    assert set(django_settings.MIDDLEWARE) > django_settings.PAGE_MIDDLEWARE


def test_a_recall_is_answered_as_through_every_middleware(token):
    whole, plain, lean = both(RECALL, **bearer(token))
    assert lean and plain[0] == "200 OK"
    memories = json.loads(plain[2])["memories"]
    assert [m["name"] for m in memories] == ["Integration tests use a real database"]
    assert ("Cache-Control", "no-store") in plain[1] and ("X-Frame-Options", "DENY") in plain[1]
    assert plain == whole


def test_a_recall_of_a_session_is_answered_as_through_every_middleware(token):
    whole = answer(wsgi.pages, environ(RECALL, body={**GOOD, "session_id": "s-1"}, **bearer(token)))
    plain = answer(
        wsgi.application, environ(RECALL, body={**GOOD, "session_id": "s-2"}, **bearer(token))
    )
    assert json.loads(plain[2])["memories"] and plain == whole
    # The session's budget holds through the plain handler too: shown once.
    again = answer(
        wsgi.application, environ(RECALL, body={**GOOD, "session_id": "s-2"}, **bearer(token))
    )
    assert json.loads(again[2])["memories"] == []


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_prompt_is_answered_as_through_every_middleware(token, method):
    whole, plain, lean = both(PROMPT, method, {"project": "acme/app"}, **bearer(token))
    assert lean and plain[0] == "200 OK" and json.loads(plain[2])["text"]
    assert plain == whole


def test_under_a_script_prefix_too(token):
    whole, plain, lean = both(RECALL, **bearer(token), SCRIPT_NAME="/memhub")
    assert lean and plain[0] == "200 OK" and plain == whole


@pytest.mark.parametrize(
    ("case", "status"),
    [
        ("revoked", "401 Unauthorized"),
        ("not JSON", "400 Bad Request"),
        ("wrong type", "400 Bad Request"),
        ("unknown agent", "404 Not Found"),
        ("throttled", "429 Too Many Requests"),
    ],
)
def test_an_error_is_the_same(alice, token, case, status):
    kwargs: dict = bearer(token)
    path = RECALL
    if case == "revoked":
        row, revoked = do_create_api_token(alice, "gone")
        do_revoke_api_token(row)
        kwargs = bearer(revoked)
    elif case == "not JSON":
        kwargs["raw"] = b'{"project": '
    elif case == "wrong type":
        kwargs["body"] = {**GOOD, "query": ["x"]}
    elif case == "unknown agent":
        path, kwargs["body"] = PROMPT, {"project": "acme/app", "agent_type": "nobody"}
    elif case == "throttled":  # the bucket is empty for another ~1000 s
        cache.set(throttle_key(hash_token(token)), time.time() + 1060.5, 3600)
    whole, plain, lean = both(path, **kwargs)
    assert lean and plain[0] == status
    assert plain == whole


def test_a_removed_member_gets_the_same_answer(alice, bob, token):
    project = resolve_store(alice, "acme/app", "private").project
    project.members.add(bob)
    bobs = do_create_api_token(bob, "agent")[1]
    project.members.remove(bob)
    for path, status in ((RECALL, "200 OK"), (PROMPT, "404 Not Found")):
        whole, plain, lean = both(path, **bearer(bobs))
        assert lean and plain[0] == status and plain == whole
    assert json.loads(plain[2])["error"]["code"] == "no_project"  # as for an unknown one


@pytest.mark.parametrize("script_name", ["", "/memhub"])
def test_a_body_over_the_limit_is_the_same_413(token, settings, script_name):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    body = {**GOOD, "query": "x" * 2000}
    whole, plain, lean = both(RECALL, body=body, **bearer(token), SCRIPT_NAME=script_name)
    assert lean and plain[0] == "413 Request Entity Too Large"
    assert json.loads(plain[2])["error"]["code"] == "too_large"
    assert plain == whole


def test_a_request_with_cookies_takes_every_middleware(token):
    """The session middleware expires a stale session cookie: that answer is the whole
    chain's to give."""
    whole, plain, lean = both(RECALL, **bearer(token), HTTP_COOKIE="sessionid=stale")
    assert not lean and plain[0] == "200 OK"
    assert any(name == "Set-Cookie" for name, _ in plain[1])
    assert plain == whole


def test_a_query_django_refuses_is_the_same_400(token, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    query = {"project": "acme/app", **{f"f{n}": "x" for n in range(20)}}
    whole, plain, lean = both(PROMPT, "GET", query, **bearer(token))
    assert not lean and plain[0] == "400 Bad Request"
    assert plain == whole


@pytest.mark.parametrize(
    ("path", "method", "headers"),
    [
        (RECALL, "GET", {}),  # 405, from DRF
        (RECALL, "POST", {"HTTP_ACCEPT": "text/html"}),
        (RECALL, "POST", {"content_type": "text/plain"}),
        (RECALL, "POST", {"QUERY_STRING": "x=1"}),
        (PROMPT, "GET", {"format": "json"}),  # DRF's format override
        (RECALL + "/surfaced", "POST", {}),
    ],
)
def test_any_other_request_takes_every_middleware(token, path, method, headers):
    if method == "GET":
        body, headers = {"project": "acme/app", **headers}, {}
    else:
        body = {"project": "acme/app"}
    whole, plain, lean = both(path, method, body, **bearer(token), **headers)
    assert not lean
    assert plain[0] == whole[0]


@pytest.mark.parametrize("authorization", [None, "Basic abc", "Bearer", "Bearer a b", "Bearer é"])
def test_without_a_well_formed_bearer_token_every_middleware_runs(authorization):
    headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
    whole, plain, lean = both(RECALL, **headers)
    assert not lean and plain[0] == "401 Unauthorized"
    assert plain == whole


def test_a_whole_answer_goes_back_as_its_bytes_and_a_file_is_streamed(token):
    """The server sends a whole answer in one call, and Django's end of the request (its
    database connections checked, the request's state dropped) has run by then; a file is
    left to the server to stream and close."""
    finished = []

    def ended(sender, **kwargs):
        finished.append(sender)

    request_finished.connect(ended, weak=False, dispatch_uid="test-finished")
    try:
        for variables in (environ(RECALL, **bearer(token)), environ("/login/", "GET")):
            result = wsgi.application(variables, lambda status, headers, exc_info=None: None)
            assert type(result) is list and len(result) == 1 and result[0]
            assert len(finished) == 1
            finished.clear()
        stylesheet = RequestFactory().get("/static/memapp/memhub.css").environ
        streamed = wsgi.application(stylesheet, lambda status, headers, exc_info=None: None)
        assert not isinstance(streamed, list) and not finished
        assert b"".join(streamed).startswith(b"/* memhub: plain, readable")
        streamed.close()
        assert len(finished) == 1
    finally:
        request_finished.disconnect(dispatch_uid="test-finished")
