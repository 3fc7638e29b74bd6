"""Daily logs through the API (docs/design.md §14.8): an entry appended to today's log in the
agent's date, refused with the reason when it is over 4 KB, on several lines or holds a secret;
listing, reading and merging a copy; nobody else's logs, no team logs, no way out of the
store."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from django.utils import timezone

from memapp.stores.projects import resolve_store
from tests.lifecycle.conftest import PROJECT
from tests.memdir.test_secret_rules import fake_tokens

pytestmark = pytest.mark.django_db

TODAY = timezone.now().date()
KEY = f"logs/{TODAY:%Y}/{TODAY:%m}/{TODAY.isoformat()}.md"


def append(client, text: str, **fields):
    body = {"project": PROJECT, "text": text, "date": TODAY.isoformat(), **fields}
    return client.post("/api/v1/logs", body, format="json")


def private(user):
    return resolve_store(user, PROJECT, "private")


def test_an_entry_goes_to_todays_log_of_the_callers_private_store(alice, alice_api):
    first = append(alice_api, "Code freeze starts 2026-03-10", time="9:05", type="project")
    second = append(alice_api, "  Demo went well  ")
    assert first.status_code == 200, first.content
    assert first.json()["key"] == KEY
    assert first.json()["line"] == "- 09:05 [project] Code freeze starts 2026-03-10"
    text = (Path(private(alice).path) / KEY).read_text()
    assert text == "- 09:05 [project] Code freeze starts 2026-03-10\n- Demo went well\n"
    assert second.json()["checksum"].startswith("sha256:")
    assert not private(alice).files.exists()  # a log is no memory file


def test_the_agents_date_may_be_a_day_off_but_no_more(alice_api):
    for offset in (-1, 1):
        day = TODAY + datetime.timedelta(days=offset)
        assert append(alice_api, "x", date=day.isoformat()).status_code == 200
    response = append(alice_api, "x", date=(TODAY - datetime.timedelta(days=3)).isoformat())
    assert response.status_code == 400
    assert "not today anywhere" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("text", "status", "code"),
    [
        ("x" * 4097, 413, "entry_too_large"),
        ("first line\nsecond line", 400, "invalid"),
        ("   ", 400, "invalid"),
        ("nul \x00 byte", 400, "invalid"),
    ],
)
def test_bad_lines_are_refused_with_the_reason_and_nothing_is_written(
    alice, alice_api, text, status, code
):
    response = append(alice_api, text)
    assert response.status_code == status, response.content
    assert response.json()["error"]["code"] == code
    assert not (Path(private(alice).path) / KEY).exists()


def test_a_secret_is_refused_naming_the_rule_never_the_value(alice, alice_api):
    token = fake_tokens()["github-pat"]
    response = append(alice_api, f"the CI token is {token}")
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == "secret_detected" and "GitHub" in error["message"]
    assert token not in response.content.decode()
    assert not (Path(private(alice).path) / KEY).exists()


def test_unknown_fields_and_types_are_refused(alice_api):
    assert append(alice_api, "x", mood="good").status_code == 400
    assert append(alice_api, "x", type="opinion").status_code == 400
    assert append(alice_api, "x", time="25:61").status_code == 400


def test_listing_reading_and_merging_a_copy(alice, alice_api):
    append(alice_api, "from the server", time="10:00")
    store = private(alice)
    listing = alice_api.get(f"/api/v1/stores/{store.pk}/logs/").json()["logs"]
    assert [(item["key"], item["entries"]) for item in listing] == [(KEY, 1)]
    url = f"/api/v1/stores/{store.pk}/logs/{TODAY.isoformat()}"
    merged = alice_api.post(
        url, {"lines": ["- 10:00 from the server", "- 11:00 from the laptop"]}, format="json"
    )
    assert merged.json()["appended"] == 1
    again = alice_api.post(url, {"lines": ["- 11:00 from the laptop"]}, format="json")
    assert again.json()["appended"] == 0
    read = alice_api.get(url).json()
    assert read["content"] == "- 10:00 from the server\n- 11:00 from the laptop\n"
    assert read["checksum"] == again.json()["checksum"]
    old = alice_api.post(
        f"/api/v1/stores/{store.pk}/logs/2026-01-31",
        {"lines": ["- a day logged offline"]},
        format="json",
    )
    assert old.status_code == 200 and (Path(store.path) / "logs/2026/01/2026-01-31.md").exists()
    assert alice_api.get(f"/api/v1/stores/{store.pk}/logs/2020-01-01").status_code == 404


def test_a_merge_with_one_bad_line_writes_nothing_and_names_it(alice, alice_api):
    store = private(alice)
    token = fake_tokens()["slack-bot-token"]
    response = alice_api.post(
        f"/api/v1/stores/{store.pk}/logs/{TODAY.isoformat()}",
        {"lines": ["- fine", f"- token {token}"]},
        format="json",
    )
    assert response.status_code == 422
    assert response.json()["error"]["details"] == {"key": KEY, "line": 2}
    assert not (Path(store.path) / KEY).exists()


def test_nobody_else_sees_or_writes_your_logs(alice, alice_api, bob_api):
    append(alice_api, "mine")
    store = private(alice)
    assert bob_api.get(f"/api/v1/stores/{store.pk}/logs/").status_code == 404
    url = f"/api/v1/stores/{store.pk}/logs/{TODAY.isoformat()}"
    assert bob_api.get(url).status_code == 404
    assert bob_api.post(url, {"lines": ["- bob was here"]}, format="json").status_code == 404
    assert (Path(store.path) / KEY).read_text() == "- mine\n"


def test_team_stores_keep_no_logs(alice, alice_api):
    private(alice)
    team = resolve_store(alice, PROJECT, "team")
    assert alice_api.get(f"/api/v1/stores/{team.pk}/logs/").status_code == 404


def test_no_log_key_leads_out_of_the_store(alice, alice_api, tmp_path):
    store = private(alice)
    outside = tmp_path / "outside"
    outside.mkdir()
    (Path(store.path) / "logs").symlink_to(outside)
    response = append(alice_api, "escape?")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_key"
    assert not any(outside.rglob("*"))
    bad_day = alice_api.get(f"/api/v1/stores/{store.pk}/logs/2026-02-30")
    assert bad_day.status_code == 400
    through_the_link = alice_api.get(f"/api/v1/stores/{store.pk}/logs/2020-01-01")
    assert through_the_link.json()["error"]["code"] == "invalid_key"


@pytest.mark.parametrize(
    "text",
    [
        "deploy with AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE from the AWS docs",
        "AWS_SECRET_ACCESS_KEY=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 for the backups",
        "ran docker login -u deploy -p dckr_pat_Qm7Lx2Vt9Pz4 registry",
        "ci uses curl -u deploy:Hx7pq2Lm9w for the hook",
        'config has db_pass: "hunterfoo-but-longer" now',  # only detect-secrets knows it
    ],
)
def test_every_shape_of_secret_is_refused_by_both_layers(alice, alice_api, text):
    response = append(alice_api, text)
    assert response.status_code == 422, text
    assert response.json()["error"]["code"] == "secret_detected"
    assert not (Path(private(alice).path) / KEY).exists()
