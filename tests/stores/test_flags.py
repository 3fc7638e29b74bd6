import pytest

from memapp.stores.flags import FLAGS, FlagError, clear_flag_override, get_flag, set_flag
from memapp.stores.models import Event, Project

pytestmark = pytest.mark.django_db


def test_every_flag_has_its_design_default():
    assert get_flag("recall_max") == 5
    assert get_flag("recall_model") == "claude-sonnet-4-6"
    assert get_flag("index_max_lines") == 200
    assert get_flag("index_max_bytes") == 25_000
    assert get_flag("scan_max_files") == 200
    assert get_flag("frontmatter_max_lines") == 30
    assert get_flag("surface_max_bytes") == 4096
    assert get_flag("surface_session_bytes") == 61_440
    assert get_flag("team_max_entry_bytes") == 250_000
    assert get_flag("consolidation_min_hours") == 24
    assert get_flag("consolidation_min_sessions") == 5
    assert get_flag("protocol_project_creation") == "staff"
    assert get_flag("recall") is True and get_flag("recall_offline_only") is False


def test_a_project_override_beats_the_global_value_which_beats_the_default():
    app = Project.objects.create(key="acme/app")
    other = Project.objects.create(key="acme/other")
    set_flag("recall_max", 3)
    set_flag("recall_max", 2, project=app)
    assert get_flag("recall_max") == 3
    assert get_flag("recall_max", app) == 2
    assert get_flag("recall_max", other) == 3
    clear_flag_override("recall_max", app)
    assert get_flag("recall_max", app) == 3


def test_values_are_validated_and_typed():
    assert set_flag("recall", "off") is False
    assert get_flag("recall") is False
    assert set_flag("recall_max", "7") == 7
    with pytest.raises(FlagError, match="recall_max must be at least 1, not 0"):
        set_flag("recall_max", 0)
    with pytest.raises(FlagError, match="index_max_lines must be an integer, not 'lots'"):
        set_flag("index_max_lines", "lots")
    with pytest.raises(FlagError, match="recall_model must be a non-empty string"):
        set_flag("recall_model", "  ")
    with pytest.raises(FlagError, match="must be one of staff, everyone"):
        set_flag("protocol_project_creation", "anyone")
    with pytest.raises(FlagError, match="unknown flag 'no_such_flag'"):
        get_flag("no_such_flag")


def test_global_only_flags_refuse_a_project_override():
    app = Project.objects.create(key="acme/app")
    with pytest.raises(FlagError, match="global only"):
        set_flag("secrets_entropy_plugins", True, project=app)


def test_every_change_is_audited(alice):
    app = Project.objects.create(key="acme/app")
    set_flag("recall_max", 4, project=app, user=alice, note="noisy recalls")
    event = Event.objects.get(kind="flag_changed")
    assert event.user == alice and event.project == app
    assert event.fields == {
        "name": "recall_max",
        "scope": "acme/app",
        "old": 5,
        "new": 4,
        "note": "noisy recalls",
    }


def test_flags_of_features_not_built_yet_are_marked():
    assert FLAGS["frontmatter_max_lines"].in_effect is False
