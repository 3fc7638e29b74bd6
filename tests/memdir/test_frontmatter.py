import datetime
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memapp.memdir.frontmatter import (
    BINARY_FILE,
    HEADER_NOT_CLOSED,
    INVALID_UTF8,
    MEMORY_TYPES,
    FrontmatterError,
    Memory,
    decode_bytes,
    extract_links,
    parse_header,
    parse_memory,
    render_memory,
)

DESIGN_EXAMPLE = """\
---
name: Integration tests use a real database
description: Integration tests must hit a real database, not mocks (one line; recall relies on it)
type: feedback
---
Rule or fact.

**Why:** the reason (an incident, a preference).
**How to apply:** when and where it applies.
"""


def header_of(*lines: str, body: str = "body\n") -> str:
    return "---\n" + "".join(f"{line}\n" for line in lines) + "---\n" + body


# --- reading ------------------------------------------------------------------------------------


def test_it_parses_the_design_example_exactly():
    memory = parse_memory(DESIGN_EXAMPLE, path="feedback_testing.md")

    assert memory == Memory(
        name="Integration tests use a real database",
        description=(
            "Integration tests must hit a real database, not mocks (one line; recall relies on it)"
        ),
        type="feedback",
        body=(
            "Rule or fact.\n\n**Why:** the reason (an incident, a preference).\n"
            "**How to apply:** when and where it applies.\n"
        ),
        type_form="top",
        frontmatter={
            "name": "Integration tests use a real database",
            "description": (
                "Integration tests must hit a real database, not mocks "
                "(one line; recall relies on it)"
            ),
            "type": "feedback",
        },
        problem=None,
        has_frontmatter=True,
        path="feedback_testing.md",
    )
    assert memory.links == ()


def test_it_renders_the_design_example_back_byte_for_byte():
    assert render_memory(parse_memory(DESIGN_EXAMPLE)) == DESIGN_EXAMPLE


@pytest.mark.parametrize("mtype", MEMORY_TYPES)
def test_it_reads_every_known_type(mtype):
    memory = parse_memory(header_of(f"type: {mtype}"))
    assert (memory.type, memory.type_form) == (mtype, "top")


def test_it_reads_the_type_from_flow_style_metadata():
    memory = parse_memory(header_of("name: real-db-tests", "metadata: {type: feedback}"))
    assert (memory.name, memory.type, memory.type_form) == ("real-db-tests", "feedback", "metadata")


def test_it_reads_the_type_from_block_style_metadata():
    memory = parse_memory(header_of("name: n", "metadata:", "  type: project", "  owner: ana"))
    assert (memory.type, memory.type_form) == ("project", "metadata")
    assert memory.frontmatter["metadata"] == {"type": "project", "owner": "ana"}


def test_a_top_level_type_wins_over_metadata():
    memory = parse_memory(header_of("type: user", "metadata: {type: project}"))
    assert (memory.type, memory.type_form) == ("user", "top")


@pytest.mark.parametrize(
    ("lines", "form"),
    [
        (("type: opinion",), "top"),
        (("type: Feedback",), "top"),
        (("metadata: {type: opinion}",), "metadata"),
        (("name: x",), None),
        (("type: ",), "top"),
    ],
)
def test_an_unknown_or_missing_type_is_untyped(lines, form):
    memory = parse_memory(header_of(*lines))
    assert memory.type is None
    assert memory.type_form == form
    assert memory.problem is None


def test_values_yaml_would_type_are_read_as_written():
    memory = parse_memory(header_of("name: 2026", "description: yes"))
    assert (memory.name, memory.description) == ("2026", "yes")

    memory = parse_memory(header_of("name: 0x1F", "description: 2026-03-05"))
    assert (memory.name, memory.description) == ("0x1F", "2026-03-05")
    assert memory.frontmatter["description"] == datetime.date(2026, 3, 5)


def test_a_non_scalar_name_is_dropped_with_a_problem():
    memory = parse_memory(header_of("name: [a, b]", "description: {x: 1}", "type: [user]"))
    assert (memory.name, memory.description, memory.type) == (None, None, None)
    assert memory.problem == (
        "name is a list, not text; description is a mapping, not text; type is a list, not text"
    )
    assert memory.frontmatter["name"] == ["a", "b"]


def test_a_null_name_is_just_absent():
    memory = parse_memory(header_of("name:", "description: ~"))
    assert (memory.name, memory.description, memory.problem) == (None, None, None)


@pytest.mark.parametrize(
    "lines",
    [
        ("name: Flat", "description: Only text", "type: user"),
        ("name: Nested", "metadata:", "  type: project", "  tags: [a, b]"),
    ],
)
def test_each_reader_of_a_header_gets_its_own_frontmatter(lines):
    """The same header read again is loaded once (a rescan after an edit of the body): what
    one reader changes in its frontmatter is not what the next one reads."""
    text = header_of(*lines)
    first = parse_header(text).frontmatter
    expected = parse_header(text).frontmatter
    first["name"] = "changed"
    first.setdefault("metadata", {})["type"] = "user"
    if "tags" in first["metadata"]:
        first["metadata"]["tags"].append("c")
    again = parse_header(text)
    assert again.frontmatter == expected
    assert again.frontmatter is not expected
    assert again.name == lines[0].removeprefix("name: ")


@pytest.mark.parametrize(
    ("line", "value"),
    [
        ("description: use a: b and #tags", "use a: b and #tags"),
        ("description: @mention", "@mention"),
        ("description: `code` first", "`code` first"),
        ("description: 100% {sure}", "100% {sure}"),
        ('description: say "hi": now', 'say "hi": now'),
        ("description: back\\slash: x", "back\\slash: x"),
    ],
)
def test_it_retries_once_with_special_values_quoted(line, value):
    memory = parse_memory(header_of("name: n", line, "type: user"))
    assert memory.problem is None
    assert (memory.name, memory.description, memory.type) == ("n", value, "user")


def test_the_retry_keeps_the_first_error_when_it_still_fails():
    memory = parse_memory(header_of("name: n", 'description: "unterminated'))
    assert memory.has_frontmatter
    assert memory.frontmatter == {}
    assert (memory.name, memory.description) == (None, None)
    assert memory.problem == "invalid YAML: found unexpected end of stream (line 4, column 1)"


def test_an_error_line_number_counts_from_the_top_of_the_file():
    memory = parse_memory(header_of("name: n", "description: ok", "  bad: indent: x: y"))
    assert memory.problem == (
        "invalid YAML: mapping values are not allowed in this context (line 4, column 6)"
    )


def test_an_impossible_date_is_a_problem_not_a_crash():
    memory = parse_memory(header_of("name: n", "when: 2026-13-45"))
    assert memory.frontmatter == {}
    assert memory.problem == "invalid YAML: month must be in 1..12"


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (("- a list",), "frontmatter is not a mapping (it is a list)"),
        (("just text",), "frontmatter is not a mapping (it is a string)"),
        (("42",), "frontmatter is not a mapping (it is a number)"),
    ],
)
def test_frontmatter_that_is_not_a_mapping_is_empty_with_the_reason(lines, reason):
    memory = parse_memory(header_of(*lines))
    assert (memory.frontmatter, memory.problem, memory.has_frontmatter) == ({}, reason, True)
    assert memory.body == "body\n"


def test_an_empty_header_is_fine():
    memory = parse_memory("---\n---\nbody")
    assert (memory.frontmatter, memory.problem, memory.has_frontmatter) == ({}, None, True)
    assert memory.body == "body"


def test_a_file_without_frontmatter_is_all_body():
    memory = parse_memory("# Notes\n\nname: not a header\n")
    assert (memory.has_frontmatter, memory.problem, memory.frontmatter) == (False, None, {})
    assert memory.body == "# Notes\n\nname: not a header\n"


def test_an_empty_file_has_no_frontmatter():
    memory = parse_memory("")
    assert (memory.has_frontmatter, memory.problem, memory.body, memory.name) == (
        False,
        None,
        "",
        None,
    )


@pytest.mark.parametrize("first", ["----", "--- x", " ---", "---x"])
def test_the_header_must_open_with_a_bare_dash_line(first):
    memory = parse_memory(f"{first}\nname: n\n---\nbody")
    assert (memory.has_frontmatter, memory.name, memory.problem) == (False, None, None)


def test_delimiter_lines_may_carry_trailing_blanks():
    memory = parse_memory("--- \t\nname: n\n---  \nbody")
    assert (memory.name, memory.body) == ("n", "body")


def test_a_dash_line_inside_a_value_does_not_close_the_header():
    memory = parse_memory("---\nname: n\n----\n---\nbody")  # "----" is YAML, not a closing line
    assert memory.problem == "invalid YAML: could not find expected ':' (line 4, column 1)"
    assert memory.body == "body"
    memory = parse_memory("---\nname: a---b\n---\nbody")
    assert (memory.name, memory.body) == ("a---b", "body")


def test_a_header_closing_on_line_30_counts():
    text = "---\n" + "".join(f"k{i}: {i}\n" for i in range(28)) + "---\nbody"
    assert text.splitlines()[29] == "---"
    memory = parse_memory(text)
    assert memory.has_frontmatter and memory.body == "body"
    assert len(memory.frontmatter) == 28


def test_a_header_closing_beyond_line_30_is_no_frontmatter():
    text = "---\n" + "".join(f"k{i}: {i}\n" for i in range(29)) + "---\nbody"
    memory = parse_memory(text)
    assert (memory.has_frontmatter, memory.problem) == (False, HEADER_NOT_CLOSED)
    assert memory.problem == "header not closed within the first 30 lines"
    assert memory.body == text
    assert memory.header_unclosed


def test_a_header_never_closed_is_no_frontmatter():
    for text in ("---", "---\n", "---\nname: n\n\nbody without end\n"):
        memory = parse_memory(text)
        assert (memory.has_frontmatter, memory.problem, memory.body) == (
            False,
            HEADER_NOT_CLOSED,
            text,
        )


def test_crlf_files_are_read_and_their_body_kept_as_is():
    memory = parse_memory("---\r\nname: n\r\ntype: user\r\n---\r\nline 1\r\nline 2\r\n")
    assert (memory.name, memory.type) == ("n", "user")
    assert memory.body == "line 1\r\nline 2\r\n"


def test_a_byte_order_mark_is_skipped():
    memory = parse_memory("\ufeff---\nname: n\n---\nbody")
    assert (memory.name, memory.body) == ("n", "body")
    memory = parse_memory("\ufeffno header")
    assert memory.body == "no header"
    assert render_memory(parse_memory("\ufeff---\nname: n\n---\nbody")) == "---\nname: n\n---\nbody"


def test_invalid_utf8_is_replaced_and_noted():
    memory = parse_memory(b"---\nname: caf\xe9\n---\nbody \xff")
    assert memory.name == "caf\ufffd"
    assert memory.body == "body \ufffd"
    assert memory.problem == INVALID_UTF8 == "invalid UTF-8"


def test_invalid_utf8_and_a_yaml_problem_are_both_noted():
    memory = parse_memory(b"---\n- caf\xe9\n---\n")
    assert memory.problem == "invalid UTF-8; frontmatter is not a mapping (it is a list)"


def test_valid_utf8_bytes_are_read_like_text():
    assert parse_memory(DESIGN_EXAMPLE.encode()) == parse_memory(DESIGN_EXAMPLE)


def test_a_binary_file_is_not_parsed():
    memory = parse_memory(b"---\nname: n\n---\n\x00\x01")
    assert (memory.has_frontmatter, memory.name, memory.problem) == (False, None, BINARY_FILE)


def test_decode_bytes_keeps_a_character_cut_at_the_end_of_a_partial_read():
    data = "café".encode()[:-1]
    assert decode_bytes(data, final=False) == ("caf", None)
    assert decode_bytes(data) == ("caf\ufffd", INVALID_UTF8)


def test_parse_header_reports_where_the_body_starts():
    text = "---\nname: n\n---\nbody"
    header = parse_header(text)
    assert (header.name, header.has_frontmatter, text[header.body_start :]) == ("n", True, "body")
    assert parse_header("no header").body_start == 0
    assert parse_header("---\nname: n\n---").body_start == len("---\nname: n\n---")


# --- links --------------------------------------------------------------------------------------


def test_it_extracts_links_in_order_without_duplicates():
    body = "See [[real-db-tests]], [[deploy-window|the window]] and [[real-db-tests]].\n"
    body += "Also [[ spaced ]], [[notes#why]], [[]] and [not a link] and [[two\nlines]]."
    assert parse_memory(header_of("name: n", body=body)).links == (
        "real-db-tests",
        "deploy-window",
        "spaced",
        "notes",
    )


def test_links_follow_the_body():
    memory = parse_memory(header_of("name: n", body="[[a]]"))
    assert replace(memory, body="[[b]] [[c]]").links == ("b", "c")
    assert extract_links("no links") == ()


# --- writing ------------------------------------------------------------------------------------


def test_it_writes_plain_scalars_when_it_can():
    memory = Memory(
        name="Integration tests use a real database",
        description="Hit a real database, not mocks (see the 2026-03-05 incident)",
        type="feedback",
        type_form="top",
        body="Rule.\n",
    )
    assert render_memory(memory) == (
        "---\n"
        "name: Integration tests use a real database\n"
        "description: Hit a real database, not mocks (see the 2026-03-05 incident)\n"
        "type: feedback\n"
        "---\n"
        "Rule.\n"
    )


def test_it_writes_the_metadata_form_in_block_style():
    memory = Memory(name="real-db-tests", description="d", type="project", type_form="metadata")
    assert render_memory(memory) == (
        "---\nname: real-db-tests\ndescription: d\nmetadata:\n  type: project\n---\n"
    )


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("a: b", "'a: b'"),
        ("yes", "'yes'"),
        ("null", "'null'"),
        ("~", "'~'"),
        ("123", "'123'"),
        ("1.5", "'1.5'"),
        ("2026-03-05", "'2026-03-05'"),
        ("- item", "'- item'"),
        ("#tag", "'#tag'"),
        ("a #b", "'a #b'"),
        ("@mention", "'@mention'"),
        ("  padded  ", "'  padded  '"),
        ("", "''"),
        ("'quoted'", "'''quoted'''"),
        ('say "hi"', 'say "hi"'),
        ("Grüße, 東京 ✓", "Grüße, 東京 ✓"),
        ("tab\there", '"tab\\there"'),
        ("bell\x07", '"bell\\a"'),
        ("line\nbreak", '"line\\nbreak"'),
        ("x" * 300, "x" * 300),
    ],
)
def test_it_quotes_a_name_only_when_yaml_needs_it(value, written):
    rendered = render_memory(Memory(name=value, type="user", body="b"))
    assert rendered == f"---\nname: {written}\ntype: user\n---\nb"
    assert parse_memory(rendered).name == value


def test_it_keeps_other_keys_in_their_order_after_the_known_ones():
    text = header_of(
        "tags: [db, tests]",
        "type: feedback",
        "created: 2026-03-05",
        "description: d",
        "name: n",
        "weight: 3",
    )
    memory = parse_memory(text)
    assert render_memory(memory) == header_of(
        "name: n",
        "description: d",
        "type: feedback",
        "tags:",
        "- db",
        "- tests",
        "created: 2026-03-05",
        "weight: 3",
    )
    assert parse_memory(render_memory(memory)).frontmatter == memory.frontmatter


def test_it_keeps_the_metadata_form_and_the_other_metadata_keys():
    memory = parse_memory(header_of("name: n", "metadata: {owner: ana, type: user}"))
    rendered = render_memory(replace(memory, type="reference"))
    assert rendered == header_of("name: n", "metadata:", "  type: reference", "  owner: ana")


def test_moving_to_the_top_form_leaves_no_empty_metadata():
    memory = parse_memory(header_of("name: n", "metadata: {type: user}"))
    assert render_memory(replace(memory, type_form="top")) == header_of("name: n", "type: user")


def test_clearing_the_type_drops_it_but_an_unknown_type_is_kept():
    memory = parse_memory(header_of("name: n", "type: user"))
    assert render_memory(replace(memory, type=None)) == header_of("name: n")

    memory = parse_memory(header_of("name: n", "type: opinion"))
    assert render_memory(memory) == header_of("name: n", "type: opinion")

    memory = parse_memory(header_of("name: n", "metadata: {type: opinion}"))
    assert render_memory(memory) == header_of("name: n", "metadata:", "  type: opinion")


def test_values_the_parser_could_not_use_are_written_back():
    memory = parse_memory(header_of("name: [a, b]", "description: d"))
    assert render_memory(memory) == header_of("name:", "- a", "- b", "description: d")


def test_a_memory_without_fields_gets_an_empty_header():
    assert render_memory(Memory(body="just text\n")) == "---\n---\njust text\n"


def test_it_refuses_a_multi_line_description():
    for description in ("one\ntwo", "one\r\ntwo", "trailing\n", "sep\u2028arator"):
        with pytest.raises(FrontmatterError, match="description must be one line"):
            render_memory(Memory(name="n", description=description))


def test_it_refuses_to_add_a_second_header():
    text = "---\n" + "".join(f"k{i}: {i}\n" for i in range(29)) + "---\nbody"
    memory = parse_memory(text, path="long.md")
    with pytest.raises(FrontmatterError, match="long.md: header not closed within the first 30"):
        render_memory(replace(memory, name="new name"))


def test_it_refuses_an_unknown_type():
    with pytest.raises(FrontmatterError, match="unknown memory type 'opinion'"):
        render_memory(Memory(name="n", type="opinion"))


def test_a_long_list_is_written_in_flow_style_to_stay_within_30_lines():
    memory = Memory(name="n", frontmatter={"tags": [f"t{i}" for i in range(40)]})
    rendered = render_memory(memory)
    assert "tags: [t0, t1, t2," in rendered
    assert parse_memory(rendered).frontmatter["tags"] == [f"t{i}" for i in range(40)]


def test_a_header_that_cannot_fit_in_30_lines_is_refused():
    memory = Memory(name="n", frontmatter={f"k{i}": i for i in range(40)})
    with pytest.raises(FrontmatterError, match="would not fit in 30 lines"):
        render_memory(memory)


# --- round trip ---------------------------------------------------------------------------------

one_line = st.text().filter(
    lambda s: not any(c in s for c in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
)


@given(
    name=st.none() | st.text(),
    description=st.none() | one_line,
    mtype=st.none() | st.sampled_from(MEMORY_TYPES),
    form=st.sampled_from(["top", "metadata", None]),
    body=st.text(),
)
def test_render_then_parse_gives_the_same_memory(name, description, mtype, form, body):
    memory = Memory(
        name=name,
        description=description,
        type=mtype,
        type_form=form,
        body=body,
        frontmatter={"tags": ["a", "b: c"], "created": datetime.date(2026, 3, 5), "n": 3},
    )
    rendered = render_memory(memory)
    again = parse_memory(rendered)

    assert again.problem is None
    assert (again.name, again.description, again.type) == (name, description, mtype)
    assert (again.body, again.links) == (body, memory.links)
    assert {k: again.frontmatter[k] for k in ("tags", "created", "n")} == memory.frontmatter
    if mtype is not None:
        assert again.type_form == (form or "top")
    assert render_memory(again) == rendered


@given(st.text())
def test_parsing_any_text_never_raises(text):
    memory = parse_memory(text)
    assert text.endswith(memory.body)


@given(st.binary())
def test_parsing_any_bytes_never_raises(data):
    parse_memory(data)


@given(st.lists(st.sampled_from(["---", "name: n", "a: [", "- x", "", "k: v: w", "@", "\r"])))
def test_parsing_header_like_text_never_raises(lines):
    parse_memory("\n".join(lines))
