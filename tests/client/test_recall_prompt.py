"""`memhub-agent recall` and `memhub-agent prompt` against a real server."""

from __future__ import annotations

import json

import pytest

from tests.client.conftest import topic

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def a(machine_a, server):
    machine_a.login(server)
    machine_a.write("MEMORY.md", "- [Real DB](feedback_db.md) — integration tests, no mocks\n")
    machine_a.write(
        "feedback_db.md",
        topic(
            "Integration tests use a real database",
            "Integration tests must hit a real database, not mocks",
            body="Use the real database.\n",
        ),
    )
    machine_a.sync()
    return machine_a


def test_recall_prints_the_rendered_memories(a):
    result = a.run("recall", "how should integration tests reach the database?")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<system-reminder>")
    assert f"{a.memory_dir / 'feedback_db.md'}" in result.stdout
    assert "Use the real database." in result.stdout


def test_recall_json_gives_the_structured_answer(a):
    result = a.run(
        "recall",
        "integration tests database",
        "--tools",
        "Grep, Bash",
        "--scope",
        "private",
        "--json",
    )

    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["selector"] == "offline"
    [memory] = answer["memories"]
    assert memory["scope"] == "private"
    assert memory["type"] == "feedback"
    assert memory["name"] == "Integration tests use a real database"
    assert memory["path"].endswith("feedback_db.md")
    assert answer["rendered"].startswith("<system-reminder>")


def test_recall_prints_nothing_when_nothing_fits(a):
    result = a.run("recall", "what is the capital of France?")

    assert (result.returncode, result.stdout) == (0, "")


def test_prompt_prints_the_memory_section_with_the_local_paths(a):
    result = a.run("prompt")

    assert result.returncode == 0, result.stderr
    assert str(a.memory_dir) in result.stdout
    assert "- [Real DB](feedback_db.md) — integration tests, no mocks" in result.stdout
    answer = json.loads(a.run("prompt", "--json").stdout)
    assert answer["text"] == result.stdout.removesuffix("\n")
    assert answer["mode"]


def test_recall_and_prompt_need_a_login(machine_a):
    for args in (["recall", "anything"], ["prompt"]):
        result = machine_a.run(*args)
        assert result.returncode == 3  # authentication
        assert "not logged in" in result.stderr


def test_a_server_error_is_reported_not_raised(machine_a, closed_port):
    machine_a.extra_env.update(MEMHUB_URL=f"http://127.0.0.1:{closed_port}", MEMHUB_TOKEN="mh_x")

    result = machine_a.run("prompt")

    assert result.returncode == 4  # unreachable
    assert "cannot reach" in result.stderr
    assert "Traceback" not in result.stderr
