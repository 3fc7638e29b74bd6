import dataclasses
import datetime
import re

import pytest

from memapp.memdir.prompt import (
    MODES,
    IndexInfo,
    PromptRequest,
    PromptResult,
    assemble_prompt,
    choose_mode,
    daily_log_path,
)

COMMON_TAIL = [
    "## When to access memories",
    "## Before recommending from memory",
    "## Memory and other forms of persistence",
]
INDIVIDUAL = [
    "# auto memory",
    "## Types of memory",
    "## What NOT to save in memory",
    "## How to save memories",
    *COMMON_TAIL,
]
COMBINED = [
    "# Memory",
    "## Memory scope",
    "## Types of memory",
    "## What NOT to save in memory",
    "## How to save memories",
    *COMMON_TAIL,
]
HINT = "Keep index entries to one line under ~200 chars; move detail into topic files."
MARCH_5 = datetime.date(2026, 3, 5)


@pytest.fixture
def private(tmp_path):
    directory = tmp_path / "memory"
    directory.mkdir()
    return directory


@pytest.fixture
def team(private):
    directory = private / "team"
    directory.mkdir()
    return directory


def write_index(directory, text):
    (directory / "MEMORY.md").write_text(text, encoding="utf-8")


def headings(text):
    return [line for line in text.split("\n") if re.match(r"#{1,2} ", line)]


def section(text, heading):
    """The body of `heading` in `text`, up to the next heading."""
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    match = re.search(r"^#{1,2} ", rest, re.MULTILINE)
    return rest[: match.start()] if match else rest


def individual_section(directory, heading):
    return section(assemble_prompt(PromptRequest("individual", directory)).text, heading)


# --- choose_mode ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("auto", "team_memory", "daily", "has_team", "mode"),
    [
        (False, True, True, True, "disabled"),
        (True, True, True, True, "daily-log"),
        (True, False, True, False, "daily-log"),
        (True, True, False, True, "combined"),
        (True, True, False, False, "individual"),
        (True, False, False, True, "individual"),
        (True, False, False, False, "individual"),
    ],
)
def test_choose_mode_applies_the_precedence(auto, team_memory, daily, has_team, mode):
    assert choose_mode(auto, team_memory, daily, has_team) == mode


# --- requests ---------------------------------------------------------------------------------


def test_modes_are_the_four_of_the_design():
    assert MODES == ("disabled", "individual", "combined", "daily-log")


def test_a_request_is_frozen(private):
    request = PromptRequest("individual", private)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.mode = "combined"


def test_an_unknown_mode_is_refused(private):
    with pytest.raises(ValueError, match="unknown prompt mode 'skip-index'"):
        PromptRequest("skip-index", private)


def test_combined_mode_needs_a_team_dir(private):
    with pytest.raises(ValueError, match="team directory"):
        PromptRequest("combined", private)


def test_caps_must_be_positive(private):
    with pytest.raises(ValueError, match="caps"):
        PromptRequest("individual", private, max_lines=0)


# --- disabled ---------------------------------------------------------------------------------


def test_disabled_gives_an_empty_prompt(private):
    write_index(private, "- [A](a.md) — a\n")
    result = assemble_prompt(PromptRequest("disabled", private))
    assert result == PromptResult(text="", mode="disabled", sections=[], indexes=[])


# --- individual -------------------------------------------------------------------------------


def test_individual_sections_in_order(private):
    result = assemble_prompt(PromptRequest("individual", private))
    assert result.mode == "individual"
    assert result.sections == INDIVIDUAL
    assert headings(result.text) == INDIVIDUAL
    assert result.text.startswith("# auto memory\n\n")


def test_searching_past_context_is_optional_and_last(private):
    result = assemble_prompt(PromptRequest("individual", private, search_past_context=True))
    assert result.sections == [*INDIVIDUAL, "## Searching past context"]
    assert headings(result.text) == result.sections
    assert f'grep -rn "<term>" {private} --include="*.md"' in result.text


def test_the_intro_names_the_directory_and_says_it_exists(private):
    intro = section(assemble_prompt(PromptRequest("individual", private)).text, "# auto memory")
    assert f"`{private}`" in intro
    assert "already exists" in intro
    assert "write to it directly" in intro


def test_individual_index_rendering(private):
    write_index(private, "- [Testing](feedback_testing.md) — real database, no mocks\n")
    result = assemble_prompt(PromptRequest("individual", private))
    path = f"{private}/MEMORY.md"
    assert result.text.endswith(
        "\n\n"
        f"Contents of {path} (your memory index, kept across conversations):\n"
        "\n"
        "- [Testing](feedback_testing.md) — real database, no mocks\n"
    )
    size = len("- [Testing](feedback_testing.md) — real database, no mocks".encode())
    assert result.indexes == [IndexInfo(path, 1, size, False, False)]
    assert "<team-memory-content" not in result.text


def test_the_index_comes_after_the_last_section(private):
    write_index(private, "- [A](a.md) — a")
    result = assemble_prompt(PromptRequest("individual", private, search_past_context=True))
    assert result.text.index("## Searching past context") < result.text.index("Contents of ")


def test_a_missing_index_is_currently_empty(private):
    result = assemble_prompt(PromptRequest("individual", private))
    path = f"{private}/MEMORY.md"
    assert result.text.endswith(
        f"\n\n{path} (your memory index, kept across conversations) is currently empty.\n"
    )
    assert "Contents of" not in result.text
    assert result.indexes == [IndexInfo(path, 0, 0, False, False)]


def test_a_blank_index_is_currently_empty(private):
    write_index(private, "\n  \n")
    assert "is currently empty." in assemble_prompt(PromptRequest("individual", private)).text


def test_a_missing_directory_is_fine(tmp_path):
    result = assemble_prompt(PromptRequest("individual", tmp_path / "nowhere"))
    assert result.sections == INDIVIDUAL
    assert "is currently empty." in result.text


def test_how_to_save_covers_topic_file_and_index_entry(private):
    body = individual_section(private, "## How to save memories")
    assert "---\nname: " in body
    assert "\ndescription: " in body
    assert "\ntype: feedback\n---\n" in body
    assert "**Why:**" in body and "**How to apply:**" in body
    assert f"`{private}/MEMORY.md`" in body
    assert "`- [Title](file.md) — one-line hook`" in body
    assert "200 lines or 25,000 bytes" in body


def test_how_to_save_names_the_caps_passed_in(private):
    request = PromptRequest("individual", private, max_lines=50, max_bytes=4000)
    body = section(assemble_prompt(request).text, "## How to save memories")
    assert "50 lines or 4,000 bytes" in body


def test_types_cover_all_four_with_examples_but_no_scope(private):
    body = individual_section(private, "## Types of memory")
    for name in ("user", "feedback", "project", "reference"):
        assert f"- **{name}**: " in body
    assert body.count("  - Save when ") == 4
    assert body.count("  - Example: ") == 4
    assert "Scope:" not in body


def test_what_not_to_save_lists_what_is_not_memory(private):
    body = individual_section(private, "## What NOT to save in memory")
    for words in (
        "code patterns",
        "architecture",
        "file paths",
        "git history",
        "fix recipes",
        "CLAUDE.md",
        "ephemeral task state",
    ):
        assert words in body


def test_before_recommending_asks_to_verify(private):
    body = individual_section(private, "## Before recommending from memory")
    assert "point-in-time" in body
    assert "still exists" in body
    assert "function" in body


def test_other_persistence_names_plans_tasks_and_claude_md(private):
    body = individual_section(private, "## Memory and other forms of persistence")
    for words in ("Plans", "Tasks", "CLAUDE.md"):
        assert words in body


# --- truncation -------------------------------------------------------------------------------


def test_an_index_over_the_line_cap_is_cut_with_a_warning(private):
    write_index(private, "\n".join(f"- [M{i}](m{i}.md) — hook {i}" for i in range(1, 301)))
    result = assemble_prompt(PromptRequest("individual", private))
    assert "- [M200](m200.md) — hook 200\n" in result.text
    assert "- [M201](m201.md)" not in result.text
    assert result.text.endswith(
        "- [M200](m200.md) — hook 200\n\n"
        f"> WARNING: MEMORY.md is 300 lines (limit: 200). Only part of it was loaded. {HINT}\n"
    )
    (info,) = result.indexes
    assert (info.line_count, info.was_line_truncated, info.was_byte_truncated) == (300, True, False)


def test_the_caps_passed_in_are_used(private):
    write_index(private, "- [A](a.md) — a\n- [B](b.md) — b\n- [C](c.md) — c\n")
    result = assemble_prompt(PromptRequest("individual", private, max_lines=2, max_bytes=1000))
    assert "- [B](b.md) — b\n\n> WARNING: MEMORY.md is 3 lines (limit: 2)." in result.text
    assert "- [C](c.md)" not in result.text


def test_an_index_over_the_byte_cap_is_cut_at_a_newline(private):
    write_index(private, "\n".join(f"- [M{i}](m{i}.md) — {'x' * 80}" for i in range(10)))
    result = assemble_prompt(PromptRequest("individual", private, max_bytes=300))
    assert "> WARNING: MEMORY.md is " in result.text
    assert "index entries are too long" in result.text
    (info,) = result.indexes
    assert info.was_byte_truncated and not info.was_line_truncated
    assert info.byte_count > 300


def test_an_index_within_the_caps_has_no_warning(private):
    write_index(private, "- [A](a.md) — a\n")
    assert "WARNING" not in assemble_prompt(PromptRequest("individual", private)).text


# --- skip-index -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["individual", "combined", "daily-log"])
def test_skip_index_shows_no_index_and_no_index_step(private, team, mode):
    write_index(private, "- [Private](p.md) — private hook\n")
    write_index(team, "- [Team](t.md) — team hook\n")
    request = PromptRequest(mode, private, team_dir=team, skip_index=True, today=MARCH_5)
    result = assemble_prompt(request)
    assert result.indexes == []
    assert "MEMORY.md" not in result.text
    assert "Contents of" not in result.text
    assert "private hook" not in result.text and "team hook" not in result.text
    assert "one-line hook" not in result.text
    assert "<team-memory-content" not in result.text


def test_skip_index_keeps_the_sections(private):
    result = assemble_prompt(PromptRequest("individual", private, skip_index=True))
    assert result.sections == INDIVIDUAL
    body = section(result.text, "## How to save memories")
    assert "topic files only" in body
    assert "\ntype: feedback\n---\n" in body


# --- combined ---------------------------------------------------------------------------------


def test_combined_sections_in_order(private, team):
    result = assemble_prompt(PromptRequest("combined", private, team_dir=team))
    assert result.mode == "combined"
    assert result.sections == COMBINED
    assert headings(result.text) == COMBINED
    result = assemble_prompt(
        PromptRequest("combined", private, team_dir=team, search_past_context=True)
    )
    assert headings(result.text) == [*COMBINED, "## Searching past context"]


def test_combined_scope_names_both_directories(private, team):
    text = assemble_prompt(PromptRequest("combined", private, team_dir=team)).text
    scope = section(text, "## Memory scope")
    assert f"`{private}`" in scope
    assert f"`{team}`" in scope


def test_combined_has_a_scope_per_type(private, team):
    text = assemble_prompt(PromptRequest("combined", private, team_dir=team)).text
    types = section(text, "## Types of memory")
    scopes = re.findall(r"^- \*\*(\w+)\*\*:|^  - Scope: (.*)$", types, re.MULTILINE)
    pairs = dict(zip([n for n, _ in scopes[::2]], [s for _, s in scopes[1::2]], strict=True))
    assert pairs["user"] == "always private."
    assert pairs["feedback"].startswith("private, unless it is a convention for the whole project")
    assert pairs["feedback"].endswith("then team.")
    assert pairs["project"].startswith("lean team")
    assert pairs["reference"] == "usually team."


def test_combined_has_the_rule_against_secrets_in_team_memory(private, team):
    text = assemble_prompt(PromptRequest("combined", private, team_dir=team)).text
    rule = "Never save secrets in team memory"
    assert rule in section(text, "## Memory scope")
    assert rule in section(text, "## What NOT to save in memory")
    individual = assemble_prompt(PromptRequest("individual", private)).text
    assert rule not in individual


def test_combined_renders_both_indexes_team_wrapped(private, team):
    write_index(private, "- [Role](user_role.md) — backend engineer\n")
    write_index(team, "- [Freeze](project_freeze.md) — merge freeze 2026-03-05\n")
    result = assemble_prompt(PromptRequest("combined", private, team_dir=team))
    assert result.text.endswith(
        "\n\n"
        f"Contents of {private}/MEMORY.md (your private memory index):\n"
        "\n"
        "- [Role](user_role.md) — backend engineer\n"
        "\n"
        f"Contents of {team}/MEMORY.md (shared team memory index, synced with your team):\n"
        "\n"
        '<team-memory-content source="shared">\n'
        "- [Freeze](project_freeze.md) — merge freeze 2026-03-05\n"
        "</team-memory-content>\n"
    )
    assert [info.path for info in result.indexes] == [
        f"{private}/MEMORY.md",
        f"{team}/MEMORY.md",
    ]


def test_a_truncated_team_index_has_its_warning_inside_the_wrapper(private, team):
    write_index(team, "\n".join(f"- [T{i}](t{i}.md) — t" for i in range(5)))
    result = assemble_prompt(PromptRequest("combined", private, team_dir=team, max_lines=3))
    assert result.text.endswith(
        "- [T2](t2.md) — t\n\n"
        f"> WARNING: MEMORY.md is 5 lines (limit: 3). Only part of it was loaded. {HINT}\n"
        "</team-memory-content>\n"
    )
    assert [i.was_line_truncated for i in result.indexes] == [False, True]


def test_an_empty_team_index_is_not_wrapped(private, team):
    write_index(private, "- [A](a.md) — a\n")
    text = assemble_prompt(PromptRequest("combined", private, team_dir=team)).text
    assert text.endswith(
        f"\n\n{team}/MEMORY.md (shared team memory index, synced with your team) is currently "
        "empty.\n"
    )
    assert "<team-memory-content" not in text


def test_combined_how_to_save_names_both_indexes(private, team):
    text = assemble_prompt(PromptRequest("combined", private, team_dir=team)).text
    body = section(text, "## How to save memories")
    assert f"`{private}/MEMORY.md`" in body
    assert f"`{team}/MEMORY.md`" in body


def test_display_dirs_name_the_agents_own_paths(private, team):
    write_index(team, "- [T](t.md) — t\n")
    request = PromptRequest(
        "combined",
        private,
        team_dir=team,
        private_display_dir="/home/ana/.claude/projects/-home-ana-app/memory/",
        team_display_dir="/home/ana/.claude/projects/-home-ana-app/memory/team",
    )
    result = assemble_prompt(request)
    assert str(private) not in result.text
    assert "Contents of /home/ana/.claude/projects/-home-ana-app/memory/team/MEMORY.md" in (
        result.text
    )
    assert result.indexes[0].path == "/home/ana/.claude/projects/-home-ana-app/memory/MEMORY.md"


def test_a_windows_display_dir_is_joined_with_backslashes(private):
    request = PromptRequest(
        "individual", private, private_display_dir="C:\\Users\\ana\\.claude\\memory"
    )
    assert assemble_prompt(request).indexes[0].path == "C:\\Users\\ana\\.claude\\memory\\MEMORY.md"


# --- daily-log --------------------------------------------------------------------------------


def test_daily_log_path_is_by_year_and_month():
    assert daily_log_path(MARCH_5) == "logs/2026/03/2026-03-05.md"
    assert daily_log_path(datetime.date(2027, 12, 31)) == "logs/2027/12/2027-12-31.md"


def test_daily_log_sections_in_order(private):
    result = assemble_prompt(PromptRequest("daily-log", private, today=MARCH_5))
    assert result.mode == "daily-log"
    assert result.sections == INDIVIDUAL
    assert headings(result.text) == INDIVIDUAL


def test_daily_log_uses_today_for_the_log_path(private):
    text = assemble_prompt(PromptRequest("daily-log", private, today=MARCH_5)).text
    log = f"`{private}/logs/2026/03/2026-03-05.md`"
    assert log in section(text, "# auto memory")
    body = section(text, "## How to save memories")
    assert log in body
    assert "Append only" in body
    assert "one-line hook" not in body


def test_daily_log_defaults_to_the_local_date(private):
    text = assemble_prompt(PromptRequest("daily-log", private)).text
    assert daily_log_path(datetime.date.today()) in text


def test_daily_log_takes_precedence_over_team(private, team):
    write_index(private, "- [A](a.md) — a\n")
    write_index(team, "- [T](t.md) — team hook\n")
    result = assemble_prompt(PromptRequest("daily-log", private, team_dir=team, today=MARCH_5))
    assert "team hook" not in result.text
    assert "<team-memory-content" not in result.text
    assert result.text.endswith(
        "\n\n"
        f"Contents of {private}/MEMORY.md (memory index distilled from your daily logs):\n"
        "\n"
        "- [A](a.md) — a\n"
    )
    assert [info.path for info in result.indexes] == [f"{private}/MEMORY.md"]
