"""Recall and the prompt answered without DRF (memapp.api.plain_views) answer every request
exactly as their DRF views do: the same status, body and headers, side by side, for the usual
request and for each error it handles itself; anything else is handed to the DRF view."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.http import HttpResponse
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.response import Response
from rest_framework.test import APIClient

from memapp.api import plain_views
from memapp.api import recall as drf
from memapp.api.auth import throttle_key
from memapp.api.parsers import MAX_JSON_DEPTH
from memapp.api.plain_views import plain_prompt, plain_recall
from memapp.stores.models import ApiToken, Project
from memapp.stores.recall import session_key
from memapp.stores.tokens import do_create_api_token, do_revoke_api_token, hash_token
from memapp.stores.warm import request_scope
from tests.api.conftest import GOOD, PROMPT, RECALL, agent_request

pytestmark = pytest.mark.django_db

URL = {"recall": RECALL, "prompt": PROMPT}
VIEWS = {"recall": (plain_recall, drf.recall), "prompt": (plain_prompt, drf.prompt)}


@pytest.fixture(autouse=True)
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""


def both(endpoint: str, *args, **kwargs) -> tuple[HttpResponse, HttpResponse]:
    """The plain view's answer and the DRF view's to the same request, rendered."""
    answers = []
    for view in VIEWS[endpoint]:
        with request_scope():
            response = view(agent_request(URL[endpoint], *args, **kwargs))
        if isinstance(response, Response):
            response.render()
        answers.append(response)
    return answers[0], answers[1]


def assert_same(plain: HttpResponse, drf_answer: HttpResponse) -> None:
    assert plain.status_code == drf_answer.status_code, plain.content
    assert json.loads(plain.content) == json.loads(drf_answer.content)
    assert plain.content == drf_answer.content
    assert sorted(plain.items()) == sorted(drf_answer.items())


def bearer(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def answered_here(response: HttpResponse) -> bool:
    """The plain view answered itself (DRF's views answer with its `Response`)."""
    return not isinstance(response, Response)


def test_a_recall_is_answered_here_as_drf_answers_it(token):
    plain, by_drf = both("recall", **bearer(token), HTTP_ACCEPT="application/json")
    assert answered_here(plain) and plain.status_code == 200
    assert [m["name"] for m in json.loads(plain.content)["memories"]] == [
        "Integration tests use a real database"
    ]
    assert_same(plain, by_drf)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_prompt_is_answered_here_as_drf_answers_it(token, method):
    plain, by_drf = both("prompt", method, {"project": "acme/app"}, **bearer(token))
    assert answered_here(plain) and plain.status_code == 200
    assert_same(plain, by_drf)


BAD_BODIES = {
    "not JSON": b'{"project": "acme/app", ',
    "not UTF-8": b'{"project": "acme/\xff"}',
    "NaN": b'{"project": "acme/app", "query": "x", "wait_ms": NaN}',
    "a list": b"[1, 2]",
    "a string": b'"acme/app"',
    "too deep": b'{"query": ' + b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1) + b"}",
    "empty": b"",
}
BAD_FIELDS = [
    {"project": "acme/app"},
    {"project": "acme/app", "query": ["x"]},
    {"project": "acme/app", "query": "   "},
    {"project": "acme/app", "query": "x" * 20_001},
    {"project": "acme/app", "query": "x", "recent_tools": "Bash"},
    {"project": "acme/app", "query": "x", "already_surfaced": [1, None]},
    {"project": "acme/app", "query": "x", "scope": "everyone"},
    {"project": "acme/app", "query": "x", "wait_ms": "soon"},
    {"project": "acme/app", "query": "x", "wait_ms": -1},
    {"project": "acme/app", "query": "x", "session_id": {"a": 1}},
    {"project": "../etc", "query": "x"},
    {"project": "acme/app", "query": "x", "limit": 10},
    {"project": "acme/app", "query": "x\x00"},
]


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_a_body_that_is_not_a_json_object_is_the_same_400(token, name):
    plain, by_drf = both("recall", raw=BAD_BODIES[name], **bearer(token))
    assert answered_here(plain) and plain.status_code == 400
    assert_same(plain, by_drf)


def test_a_null_body_is_the_same_400_once_the_token_is_known(token):
    plain_views._token_users.clear()
    for _ in range(2):  # the second time, the body is read before the token is checked
        plain, by_drf = both("recall", raw=b"null", **bearer(token))
        assert answered_here(plain) and plain.status_code == 400
        assert_same(plain, by_drf)


@pytest.mark.parametrize("known", [False, True])
def test_a_length_that_is_not_ascii_digits_is_drfs_to_answer(token, known):
    if known:
        both("recall", **bearer(token))
    plain, by_drf = both("recall", **bearer(token), CONTENT_LENGTH="²")
    assert not answered_here(plain) and plain.status_code == 400
    assert_same(plain, by_drf)


@pytest.mark.parametrize("body", BAD_FIELDS)
def test_a_field_of_the_wrong_type_or_value_is_the_same_400(token, body):
    plain, by_drf = both("recall", body=body, **bearer(token))
    assert answered_here(plain) and plain.status_code == 400
    assert json.loads(plain.content)["error"]["code"] == "invalid"
    assert_same(plain, by_drf)


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_unknown_agent_is_the_same_404(token, method):
    body = {"project": "acme/app", "agent_type": "nobody"}
    plain, by_drf = both("prompt", method, body, **bearer(token))
    assert answered_here(plain) and plain.status_code == 404
    assert_same(plain, by_drf)


def refused_token(alice, how: str) -> str:
    row, token = do_create_api_token(alice, how)
    if how == "revoked":
        do_revoke_api_token(row)
    elif how == "expired":
        ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(days=1))
    elif how == "deactivated":
        alice.is_active = False
        alice.save()
    elif how == "unknown":
        token = token[:-4] + "zzzz"
    elif how == "not memhub's":
        token = "ghp_" + token
    return token


@pytest.mark.parametrize("how", ["revoked", "expired", "deactivated", "unknown", "not memhub's"])
@pytest.mark.parametrize("endpoint", ["recall", "prompt"])
def test_a_refused_token_is_the_same_401(alice, testing_memory, how, endpoint):
    token = refused_token(alice, how)
    plain, by_drf = both(endpoint, **bearer(token))
    assert answered_here(plain) and plain.status_code == 401
    assert plain["WWW-Authenticate"] == 'Bearer realm="memhub"'
    assert_same(plain, by_drf)


def test_an_expired_token_is_told_how_to_renew_it(alice, testing_memory):
    plain, _ = both("recall", **bearer(refused_token(alice, "expired")))
    assert "expired on" in json.loads(plain.content)["error"]["message"]


def test_a_removed_member_gets_the_same_answer(alice, bob, testing_memory):
    project = testing_memory.project
    project.members.add(bob)
    token = do_create_api_token(bob, "agent")[1]
    project.members.remove(bob)
    for endpoint, status in (("recall", 200), ("prompt", 404)):
        plain, by_drf = both(endpoint, **bearer(token))
        assert answered_here(plain) and plain.status_code == status
        assert_same(plain, by_drf)
    assert json.loads(plain.content)["error"]["code"] == "no_project"  # as for an unknown one


def test_a_throttled_token_is_the_same_429_with_retry_after(token):
    # The bucket is empty for another ~1000.5 s: each view's refusal says so.
    cache.set(throttle_key(hash_token(token)), time.time() + 1060.5, 3600)
    plain, by_drf = both("recall", **bearer(token))
    assert answered_here(plain) and plain.status_code == 429
    assert plain["Retry-After"] in ("1000", "1001")
    assert json.loads(plain.content)["error"]["code"] == "throttled"
    assert_same(plain, by_drf)


@pytest.mark.parametrize(
    ("endpoint", "method", "headers"),
    [
        ("recall", "GET", {}),  # 405
        ("recall", "PUT", {}),  # 405
        ("recall", "POST", {"content_type": "text/plain"}),  # 415
        ("recall", "POST", {"HTTP_ACCEPT": "text/html"}),  # 406
        ("recall", "POST", {"HTTP_ACCEPT": "application/json; indent=4"}),
        ("prompt", "GET", {"HTTP_ACCEPT": "application/json; indent=2"}),
    ],
)
def test_any_other_request_is_drfs_to_answer(token, endpoint, method, headers):
    plain, by_drf = both(endpoint, method, {"project": "acme/app"}, **bearer(token), **headers)
    assert not answered_here(plain)
    assert_same(plain, by_drf)


@pytest.mark.parametrize("authorization", [None, "Basic abc", "Bearer", "Bearer a b", "Bearer é"])
def test_a_missing_or_malformed_authorization_is_drfs_to_answer(authorization):
    headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
    plain, by_drf = both("recall", **headers)
    assert not answered_here(plain) and plain.status_code == 401
    assert_same(plain, by_drf)


def test_a_body_over_the_limit_is_a_413_before_the_view(token, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client = APIClient()
    client.credentials(**bearer(token))
    body = {**GOOD, "query": "x" * 2000}
    response = client.post(URL["recall"], body, format="json")
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"


def test_through_the_middleware_the_answer_carries_the_same_headers(token):
    client = APIClient()
    client.credentials(**bearer(token))
    response = client.post(URL["recall"], GOOD, format="json")
    assert response.status_code == 200
    assert response["Allow"] == drf.recall.cls().default_response_headers["Allow"]
    assert response["Cache-Control"] == "no-store"
    assert response["Content-Type"] == "application/json"
    assert "default-src 'self'" in response["Content-Security-Policy"]


def test_a_warm_recall_reads_its_session_with_the_warm_stamp(alice, token):
    """One SELECT brings the warm stamp, the throttle's bucket and the session's budget: the
    session is not read again on its own."""
    client = APIClient()
    client.credentials(**bearer(token))
    for n in range(2):  # the first recall builds what the next ones keep
        client.post(URL["recall"], {**GOOD, "session_id": f"warm-up-{n}"}, format="json")
    with CaptureQueriesContext(connection) as queries:
        response = client.post(URL["recall"], {**GOOD, "session_id": "s-1"}, format="json")
    assert response.status_code == 200 and json.loads(response.content)["memories"]
    selects = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    assert len(selects) == 1
    assert session_key(alice.pk, "s-1") in selects[0] and "warm-stamp" in selects[0]
    # The budget the session used is where the next recall of it finds it.
    again = client.post(URL["recall"], {**GOOD, "session_id": "s-1"}, format="json")
    assert json.loads(again.content)["memories"] == []


def test_a_wrong_user_kept_for_a_token_only_costs_a_read(alice, bob, token):
    """What the view keeps of a token's user only names what is read ahead: were it wrong, the
    recall reads its own session and the budget still holds."""
    client = APIClient()
    client.credentials(**bearer(token))
    client.post(URL["recall"], {**GOOD, "session_id": "warm-up"}, format="json")
    plain_views._token_users[hash_token(token)] = bob.pk
    with CaptureQueriesContext(connection) as queries:
        first = client.post(URL["recall"], {**GOOD, "session_id": "s-1"}, format="json")
    assert json.loads(first.content)["memories"]
    sql = " ".join(q["sql"] for q in queries.captured_queries)
    assert session_key(bob.pk, "s-1") in sql and session_key(alice.pk, "s-1") in sql
    plain_views._token_users[hash_token(token)] = bob.pk
    again = client.post(URL["recall"], {**GOOD, "session_id": "s-1"}, format="json")
    assert json.loads(again.content)["memories"] == []  # shown once to the session


@pytest.mark.parametrize("endpoint", ["recall", "prompt"])
def test_a_read_token_reads_about_a_new_project_without_creating_it(sam, endpoint):
    """Staff create a project by using it, but a token that may only read creates nothing;
    the DRF view (an `Accept` with a parameter goes to it) answers as the plain one: a recall
    with nothing to recall and why (hooks expect an answer), a prompt with 404 `no_project`."""
    body = {"project": "acme/fresh"} | ({"query": "deploys"} if endpoint == "recall" else {})
    reader = APIClient(**bearer(do_create_api_token(sam, "dashboard", ApiToken.Scope.READ)[1]))
    answers = [
        reader.post(URL[endpoint], body, format="json", HTTP_ACCEPT=accept)
        for accept in ("application/json", "application/json; indent=4")
    ]
    assert answered_here(answers[0]) and not answered_here(answers[1])
    assert answers[0].json() == answers[1].json()
    message = (
        "memhub has no project acme/fresh that you can reach: if it is there under another "
        "name, staff can give it this repo slug on its project page; if you are not one of its "
        "members, staff can add you."
    )
    if endpoint == "recall":
        assert [answer.status_code for answer in answers] == [200, 200]
        assert answers[0].json()["memories"] == []
        assert answers[0].json()["fallback_reason"] == message
    else:
        assert [answer.status_code for answer in answers] == [404, 404]
        assert answers[0].json() == {
            "error": {"code": "no_project", "message": message, "details": {}}
        }
    assert not Project.objects.filter(key="acme/fresh").exists()

    writer = APIClient(**bearer(do_create_api_token(sam, "laptop", ApiToken.Scope.WRITE)[1]))
    assert writer.post(URL[endpoint], body, format="json").status_code == 200
    assert Project.objects.get(key="acme/fresh").members.get() == sam
