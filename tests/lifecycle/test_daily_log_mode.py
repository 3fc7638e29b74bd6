"""Daily-log mode whole, and `skip_index` for memhub's own writes (issue 24): in daily-log mode
extraction appends to the day's log instead of proposing topic files and a session's recall
is not run per prompt (the prompt says so); with `skip_index`, approving a proposal, sharing
and consolidating leave MEMORY.md alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils import timezone

from memapp.lifecycle.models import ExtractionRun, Proposal
from memapp.lifecycle.proposals import do_apply_proposal
from memapp.memdir.daily_logs import daily_log_path
from memapp.stores.actions import do_share_memories
from memapp.stores.flags import set_flag
from memapp.stores.projects import resolve_store
from tests.conftest import write_memory
from tests.lifecycle.conftest import PROJECT, consolidate_now, run_worker, upload
from tests.lifecycle.untidy import make_untidy
from tests.transcripts import Transcript

pytestmark = pytest.mark.django_db(transaction=True)  # the task worker commits

INDEX = "- [Role](user_role.md) — Alice is a backend engineer\n"


@pytest.fixture(autouse=True)
def offline(settings):
    settings.ANTHROPIC_API_KEY = ""


@pytest.fixture
def store(alice):
    store = resolve_store(alice, PROJECT, "private")
    write_memory(Path(store.path), "user_role.md", "Role", "Alice is a backend engineer", "user")
    (Path(store.path) / "MEMORY.md").write_text(INDEX)
    return store


def test_extraction_appends_to_the_days_log_instead_of_proposing(alice_api, alice, store):
    set_flag("daily_log_mode", True, project=store.project, user=alice)
    t = Transcript()
    t.turn("Don't skip the migrations check again, remember that.", "Understood.")
    upload(alice_api, t)
    run_worker()
    assert not Proposal.objects.exists()
    run = ExtractionRun.objects.get()
    assert (run.outcome, run.proposed) == ("logged", 1)
    log = (Path(store.path) / daily_log_path(timezone.localdate())).read_text()
    (line,) = log.splitlines()
    assert line.startswith("- ") and "[feedback] Don't skip the migrations check." in line
    assert sorted(p.name for p in Path(store.path).glob("*.md")) == ["MEMORY.md", "user_role.md"]


def test_a_sessions_recall_is_not_run_per_prompt_and_the_prompt_says_so(alice_api, alice, store):
    set_flag("daily_log_mode", True, project=store.project, user=alice)
    ask = {"project": PROJECT, "query": "backend engineer role"}
    per_prompt = alice_api.post("/api/v1/recall", {**ask, "session_id": "s-1"}, format="json")
    assert per_prompt.json()["memories"] == []
    assert per_prompt.json()["fallback_reason"] == "daily_log_mode"
    asked = alice_api.post("/api/v1/recall", ask, format="json").json()  # an explicit recall
    assert [m["path"] for m in asked["memories"]] == ["user_role.md"]
    prompt = alice_api.post("/api/v1/prompt", {"project": PROJECT}, format="json").json()
    assert prompt["mode"] == "daily-log"
    assert "Memories are not recalled for you with each prompt in this mode" in prompt["text"]


@pytest.mark.parametrize("skip", [False, True])
def test_approving_a_proposal_leaves_the_index_alone_with_skip_index(alice_api, alice, store, skip):
    if skip:
        set_flag("skip_index", True, project=store.project, user=alice)
    t = Transcript()
    t.turn("Don't skip the migrations check again, remember that.", "Understood.")
    upload(alice_api, t)
    run_worker()
    proposal = Proposal.objects.get()
    result = do_apply_proposal(proposal, alice)
    assert len(result.applied) == 1
    index = (Path(store.path) / "MEMORY.md").read_text()
    assert (index == INDEX) is skip
    assert (Path(store.path) / result.applied[0]).is_file()


def test_sharing_leaves_the_team_index_alone_with_skip_index(alice, store):
    team = resolve_store(alice, PROJECT, "team")
    (Path(team.path) / "MEMORY.md").write_text("- [CI](ci.md) — CI runs on push\n")
    set_flag("skip_index", True, project=store.project, user=alice)
    shared = do_share_memories(store, alice, ["user_role.md"], allow_user=True)
    assert shared == {"user_role.md": "user_role.md"}
    assert (Path(team.path) / "user_role.md").is_file()
    assert (Path(team.path) / "MEMORY.md").read_text() == "- [CI](ci.md) — CI runs on push\n"


def test_consolidation_proposes_no_index_with_skip_index(alice):
    store = resolve_store(alice, PROJECT, "private")
    make_untidy(Path(store.path))
    run = consolidate_now(store, alice)
    assert any(c.key == "MEMORY.md" for p in run.proposals.all() for c in p.changes.all())
    Proposal.objects.all().delete()

    set_flag("skip_index", True, project=store.project, user=alice)
    run = consolidate_now(store, alice)
    keys = [c.key for p in run.proposals.all() for c in p.changes.all()]
    assert "MEMORY.md" not in keys
