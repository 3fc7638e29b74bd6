"""What a model may propose (docs/design.md §14.5): every change that breaks a rule is dropped
with its reason, never written; the checks a reviewer sees; the request text; and the explicit
requests caught without a model. Django-free."""

from __future__ import annotations

import datetime

import pytest

from memapp.memdir.extraction import (
    MAX_CHANGES,
    PROPOSE_TOOL,
    ProposedChange,
    Target,
    build_request,
    change_checks,
    explicit_requests,
    offline_change,
    validate_changes,
)
from memapp.memdir.transcripts import parse_entry
from tests.conftest import write_memory
from tests.memdir.test_secret_rules import fake_tokens
from tests.transcripts import Transcript

TODAY = datetime.date(2026, 3, 5)


@pytest.fixture
def targets(tmp_path) -> dict[str, Target]:
    private = tmp_path / "private"
    write_memory(private, "feedback_tests.md", "Real DB", "Tests hit a real DB", "feedback")
    (private / "team").mkdir()
    team = tmp_path / "team"
    write_memory(team, "project_release.md", "Release", "Release freeze 2026-03-05", "project")
    return {"private": Target(private, ("team",)), "team": Target(team)}


def change(**fields) -> dict:
    base = {
        "action": "create",
        "scope": "private",
        "file": "user_role.md",
        "name": "Role",
        "description": "Alice leads the backend team",
        "type": "user",
        "body": "Alice leads the backend team.\n",
        "reason": "she said so",
    }
    return {**base, **fields}


def test_the_tool_schema_is_the_contract():
    schema = PROPOSE_TOOL["input_schema"]["properties"]["changes"]["items"]
    assert PROPOSE_TOOL["name"] == "propose_memory_changes"
    assert schema["properties"]["action"]["enum"] == ["create", "update", "delete"]
    assert schema["properties"]["scope"]["enum"] == ["private", "team"]
    assert schema["properties"]["type"]["enum"] == ["user", "feedback", "project", "reference"]


def test_good_changes_are_kept(targets):
    kept, dropped = validate_changes(
        [
            change(),
            change(action="update", file="feedback_tests.md", type="feedback", name="Real DB"),
            {"action": "delete", "scope": "team", "file": "project_release.md", "reason": "old"},
        ],
        targets,
    )
    assert dropped == []
    assert [(c.action, c.scope, c.file) for c in kept] == [
        ("create", "private", "user_role.md"),
        ("update", "private", "feedback_tests.md"),
        ("delete", "team", "project_release.md"),
    ]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"action": "rename"}, "unknown action 'rename'"),
        ({"scope": "everyone"}, "unknown scope 'everyone'"),
        ({"type": "secret-sauce"}, "unknown type 'secret-sauce'"),
        ({"file": "../outside.md"}, "the file name is refused (dotdot)"),
        ({"file": "/etc/passwd.md"}, "the file name is refused (absolute)"),
        ({"file": "%2e%2e%2fescape.md"}, "the file name is refused"),
        ({"file": "notes.txt"}, "not a topic file: not a Markdown (.md) file"),
        ({"file": "MEMORY.md"}, "not a topic file: an index (MEMORY.md)"),
        ({"file": "team/sneaky.md"}, "not a topic file: inside a store of its own"),
        ({"file": "logs/2026/03/2026-03-05.md"}, "not a topic file: a daily log (logs/)"),
        ({"file": ".hidden.md"}, "not a topic file: hidden"),
        ({"action": "update", "file": "nope.md"}, "update: there is no such memory"),
        ({"file": "feedback_tests.md"}, "create: the file already exists"),
        ({"description": "two\nlines"}, "name and description must be one line"),
        ({"name": ""}, "create: name and description are required"),
        ({"body": "x" * 250_001}, "the body is over 250,000 bytes"),
        ({"body": 42}, "body is not text"),
    ],
)
def test_a_change_breaking_a_rule_is_dropped_with_its_reason(targets, fields, reason):
    kept, dropped = validate_changes([change(**fields)], targets)
    assert kept == []
    assert len(dropped) == 1
    assert dropped[0].reason.startswith(reason)


def test_a_change_holding_a_secret_is_dropped_and_the_value_never_shown(targets):
    token = fake_tokens(3)["github-pat"]
    kept, dropped = validate_changes([change(body=f"Use {token} to push.\n")], targets)
    assert kept == []
    assert dropped[0].reason == "holds what looks like a secret (GitHub personal access token)"
    assert token not in repr(dropped)


def test_500_changes_are_capped(targets):
    many = [change(file=f"user_{n}.md") for n in range(500)]
    kept, dropped = validate_changes(many, targets)
    assert len(kept) == MAX_CHANGES
    assert len(dropped) == 500 - MAX_CHANGES
    assert {d.reason for d in dropped} == {f"over the cap of {MAX_CHANGES} changes"}


def test_a_second_change_to_the_same_file_is_dropped(targets):
    kept, dropped = validate_changes([change(), change(name="Other")], targets)
    assert len(kept) == 1
    assert dropped[0].reason == "a second change to the same file"


def test_team_changes_need_a_team_store(targets):
    del targets["team"]
    kept, dropped = validate_changes([change(scope="team")], targets)
    assert dropped[0].reason == "no team store to change here"


def test_an_answer_that_is_not_a_list_is_a_bad_tool_input(targets):
    with pytest.raises(ValueError, match="not a list"):
        validate_changes({"changes": "none"}, targets)


def test_checks_name_what_a_reviewer_should_look_at():
    proposed = ProposedChange(
        "create",
        "private",
        "project_launch.md",
        "Launch",
        "Integration tests hit a real database",
        "project",
        "We launch next Thursday.\n",
    )
    checks = change_checks(
        proposed,
        [("feedback_tests.md", "Integration tests hit a real database")],
        index_lines=200,
    )
    assert [(c.code, c.level) for c in checks] == [
        ("cap", "warn"),
        ("relative_dates", "warn"),
        ("why_how", "warn"),
        ("duplicate", "warn"),
    ]
    assert "next Thursday" in checks[1].message
    assert checks[3].message == "much like feedback_tests.md"


def test_a_clean_change_has_no_checks():
    proposed = ProposedChange(
        "create",
        "private",
        "feedback_prs.md",
        "Small PRs",
        "Keep pull requests small",
        "feedback",
        "Keep PRs under 400 lines.\n\n**Why:** reviews stall.\n**How to apply:** every PR.\n",
    )
    assert change_checks(proposed, [("user_role.md", "Alice leads the backend team")]) == []


def test_the_request_holds_the_manifest_the_likely_bodies_and_the_new_messages():
    text = build_request(
        {"private": "- [user] user_role.md (2026-03-01T10:00:00.000Z): Alice leads backend"},
        [("private", "user_role.md", "---\nname: Role\n---\nAlice leads backend.\n")],
        "[user] remember that we deploy on Fridays",
        TODAY,
    )
    assert text.index("Today is 2026-03-05.") < text.index("## Manifest of the private")
    assert "- [user] user_role.md (2026-03-01T10:00:00.000Z): Alice leads backend" in text
    assert "### private: user_role.md\n\n---\nname: Role" in text
    assert text.rstrip().endswith("## New messages\n\n[user] remember that we deploy on Fridays")


def requests_in(*texts: str):
    t = Transcript()
    for text in texts:
        t.user(text)
    return explicit_requests([parse_entry(e) for e in t.entries])


DONT = "Don't mock the database in integration tests"
EXPLICIT = [
    ("remember that we deploy on Fridays", "We deploy on Fridays", "project"),  # not user
    ("remember that we never deploy on Fridays", "We never deploy on Fridays", "feedback"),
    ("Please remember to run the linter first.", "Run the linter first", "feedback"),
    (f"{DONT} again, remember that.", DONT, "feedback"),
    ("ok, remember: never push to main directly", "Never push to main directly", "feedback"),
    (
        "Fix it. Also remember that staging is at staging.example.com",
        "Staging is at staging.example.com",
        "reference",
    ),
    ("please remember my name is Ana", "My name is Ana", "user"),
]


@pytest.mark.parametrize(("said", "text", "kind"), EXPLICIT)
def test_explicit_requests_are_caught_without_a_model(said, text, kind):
    found = requests_in(said)
    assert [(r.text, r.type) for r in found] == [(text, kind)]


@pytest.mark.parametrize(
    "said",
    [
        "Do you remember what we did yesterday?",
        "I remember that bug from last week.",
        "remember when the build broke?",
        "The function is called remember_user.",
    ],
)
def test_questions_and_mentions_are_not_requests(said):
    assert requests_in(said) == []


def test_the_agent_and_tool_results_are_not_asked_to_remember():
    t = Transcript()
    t.assistant("I will remember that we deploy on Fridays.")
    call = t.tool_use("Bash", {"command": "grep -r remember ."})
    t.tool_result(call, "notes.md: remember that the API is versioned")
    assert explicit_requests([parse_entry(e) for e in t.entries]) == []


def test_an_offline_change_is_a_well_formed_private_memory():
    (request,) = requests_in("Please remember to run the linter before committing.")
    proposed = offline_change(request, "feedback_run_the_linter.md", TODAY)
    assert proposed.action == "create" and proposed.scope == "private"
    assert proposed.type == "feedback"
    assert proposed.description == "Run the linter before committing."
    assert "**Why:**" in proposed.body and "**How to apply:**" in proposed.body
    assert "2026-03-05" in proposed.body
    assert change_checks(proposed) == []
