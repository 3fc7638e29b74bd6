import re
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memapp.memdir.frontmatter import extract_links
from memapp.web.markdown import LINK_REL, MAX_MARKDOWN_CHARS, render_markdown

REL = f'rel="{LINK_REL}"'
MEMORIES = {"testing-db": "/memories/testing-db/", "deploy": "/memories/deploy/"}


def resolve(slug):
    return MEMORIES.get(slug)


# --- Markdown -----------------------------------------------------------------------------------


def test_headings_lists_and_code():
    body = (
        "# Title\n\n## Section\n\n- one\n- two\n\n3. three\n4. four\n\n"
        "Use `x < y` here.\n\n```python\nif a < b:\n    pass\n```\n\n    indented <code>\n"
    )
    assert render_markdown(body) == (
        "<h1>Title</h1>\n<h2>Section</h2>\n"
        "<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n"
        '<ol start="3">\n<li>three</li>\n<li>four</li>\n</ol>\n'
        "<p>Use <code>x &lt; y</code> here.</p>\n"
        "<pre><code>if a &lt; b:\n    pass\n</code></pre>\n"
        "<pre><code>indented &lt;code&gt;\n</code></pre>\n"
    )


def test_emphasis_quote_rule_and_strikethrough():
    body = "**Why:** it broke.\n**How to apply:** *always*.\n\n> quoted\n\n---\n\n~~old~~ new\n"
    assert render_markdown(body) == (
        "<p><strong>Why:</strong> it broke.\n<strong>How to apply:</strong> <em>always</em>.</p>\n"
        "<blockquote>\n<p>quoted</p>\n</blockquote>\n<hr>\n<p><s>old</s> new</p>\n"
    )


def test_hard_break():
    assert render_markdown("a  \nb") == "<p>a<br>\nb</p>\n"


def test_table_keeps_alignment_only_as_a_class():
    # A class, not a style attribute: the Content-Security-Policy refuses inline styles.
    body = "| Key | Value |\n|:----|------:|\n| a | **1** |\n| b | 2 |\n"
    assert render_markdown(body) == (
        "<table>\n<thead>\n<tr>\n"
        '<th class="align-left">Key</th>\n<th class="align-right">Value</th>\n'
        "</tr>\n</thead>\n<tbody>\n<tr>\n"
        '<td class="align-left">a</td>\n<td class="align-right"><strong>1</strong></td>\n'
        "</tr>\n<tr>\n"
        '<td class="align-left">b</td>\n<td class="align-right">2</td>\n'
        "</tr>\n</tbody>\n</table>\n"
    )


def test_links_get_rel_and_keep_safe_urls():
    body = '[web](https://example.com/a?b=1&c=2 "T") [mail](mailto:a@example.com) [rel](/x/y)'
    assert render_markdown(body) == (
        f'<p><a href="https://example.com/a?b=1&amp;c=2" title="T" {REL}>web</a> '
        f'<a href="mailto:a@example.com" {REL}>mail</a> '
        f'<a href="/x/y" {REL}>rel</a></p>\n'
    )


def test_autolink():
    assert render_markdown("<https://example.com>") == (
        f'<p><a href="https://example.com" {REL}>https://example.com</a></p>\n'
    )


def test_other_url_schemes_lose_their_href():
    assert render_markdown("[f](ftp://example.com/x)") == f"<p><a {REL}>f</a></p>\n"


def test_images_are_shown_as_links_not_loaded():
    assert render_markdown("![chart](https://example.com/c.png)") == (
        f'<p>!<a href="https://example.com/c.png" {REL}>chart</a></p>\n'
    )


# --- Untrusted input ----------------------------------------------------------------------------


def test_script_is_shown_as_text():
    assert render_markdown("<script>alert(1)</script>") == (
        "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
    )


def test_html_block_is_shown_as_text():
    assert render_markdown("<div>\n<b>hi</b>\n</div>") == (
        "<p>&lt;div&gt;\n&lt;b&gt;hi&lt;/b&gt;\n&lt;/div&gt;</p>\n"
    )


@pytest.mark.parametrize(
    "body",
    [
        "[x](javascript:alert(1))",
        "[x](JAVASCRIPT:alert(1))",
        "[x](vbscript:msgbox(1))",
        "[x](data:text/html,<script>alert(1)</script>)",
    ],
)
def test_dangerous_link_is_not_a_link(body):
    html = render_markdown(body)
    assert "<a" not in html
    assert html.startswith("<p>[x](")


def test_javascript_link_exact():
    assert render_markdown("[x](javascript:alert(1))") == "<p>[x](javascript:alert(1))</p>\n"


def test_javascript_reference_link_is_not_a_link():
    assert render_markdown("[x]\n\n[x]: javascript:alert(1)") == (
        "<p>[x]</p>\n<p>[x]: javascript:alert(1)</p>\n"
    )


def test_onerror_attribute_is_impossible():
    body = '<img src=x onerror="alert(1)">\n\n[a](https://e.com "t\\" onerror=\\"alert(1)") x'
    html = render_markdown(body)
    assert html == (
        '<p>&lt;img src=x onerror="alert(1)"&gt;</p>\n'
        f'<p><a href="https://e.com" title="t&quot; onerror=&quot;alert(1)" {REL}>a</a> x</p>\n'
    )
    assert_safe(html)


def test_oversized_body_is_escaped_preformatted_text():
    line = "<script>x</script> **[[deploy]]**\n"
    count = MAX_MARKDOWN_CHARS // len(line) + 1
    html = render_markdown(line * count, resolve)
    assert html == "<pre>" + "&lt;script&gt;x&lt;/script&gt; **[[deploy]]**\n" * count + "</pre>\n"


def test_body_at_the_limit_is_still_markdown():
    body = "**b**" + "x" * (MAX_MARKDOWN_CHARS - 5)
    assert render_markdown(body).startswith("<p><strong>b</strong>xxx")


# --- Wiki links ---------------------------------------------------------------------------------


def test_existing_and_missing_wikilinks():
    assert render_markdown("See [[testing-db]] and [[rollback-plan]].", resolve) == (
        '<p>See <a class="wikilink" href="/memories/testing-db/" '
        f"{REL}>testing-db</a> and "
        '<span class="wikilink missing" title="No memory named rollback-plan yet">'
        "rollback-plan</span>.</p>\n"
    )


def test_wikilinks_in_code_are_untouched():
    body = "`[[deploy]]`\n\n```\n[[deploy]]\n```\n\n    [[deploy]]\n"
    calls = []
    html = render_markdown(body, lambda slug: calls.append(slug))
    assert html == (
        "<p><code>[[deploy]]</code></p>\n"
        "<pre><code>[[deploy]]\n</code></pre>\n"
        "<pre><code>[[deploy]]\n</code></pre>\n"
    )
    assert calls == []


def test_wikilink_text_is_escaped():
    assert render_markdown('[[<b onmouseover="x">&amp;]]', resolve) == (
        '<p><span class="wikilink missing" '
        'title="No memory named &lt;b onmouseover=&quot;x&quot;&gt;&amp;amp; yet">'
        '&lt;b onmouseover="x"&gt;&amp;amp;</span></p>\n'
    )


def test_wikilink_label_and_section():
    assert render_markdown("[[deploy|how we ship]] [[deploy#rollback]]", resolve) == (
        f'<p><a class="wikilink" href="/memories/deploy/" {REL}>how we ship</a> '
        f'<a class="wikilink" href="/memories/deploy/" {REL}>deploy#rollback</a></p>\n'
    )


def test_wikilink_inside_emphasis_heading_and_table():
    body = "# About [[deploy]]\n\n**[[deploy]]**\n\n| m |\n|---|\n| [[deploy]] |\n"
    link = f'<a class="wikilink" href="/memories/deploy/" {REL}>deploy</a>'
    assert render_markdown(body, resolve) == (
        f"<h1>About {link}</h1>\n<p><strong>{link}</strong></p>\n"
        f"<table>\n<thead>\n<tr>\n<th>m</th>\n</tr>\n</thead>\n"
        f"<tbody>\n<tr>\n<td>{link}</td>\n</tr>\n</tbody>\n</table>\n"
    )


def test_not_wikilinks():
    body = "[[]] [[ ]] [[|x]] [[a\nb]] \\[[deploy]] [[a]b]]"
    calls = []
    html = render_markdown(body, lambda slug: calls.append(slug))
    assert html == "<p>[[]] [[ ]] [[|x]] [[a\nb]] [[deploy]] [[a]b]]</p>\n"
    assert calls == []


def test_wikilink_inside_brackets_and_links():
    assert render_markdown("[[[deploy]]] [a [[deploy]]](https://e.com)", resolve) == (
        f'<p>[<a class="wikilink" href="/memories/deploy/" {REL}>deploy</a>] '
        f'[a <a class="wikilink" href="/memories/deploy/" {REL}>deploy</a>](https://e.com)</p>\n'
    )


def test_without_resolver_wikilinks_are_plain_spans():
    assert render_markdown("[[deploy]]") == '<p><span class="wikilink">deploy</span></p>\n'


def test_resolver_is_called_once_per_target():
    calls = []

    def counting(slug):
        calls.append(slug)
        return MEMORIES.get(slug)

    render_markdown("[[deploy]] [[nope]] [[deploy]] [[deploy|again]] [[nope]]", counting)
    assert calls == ["deploy", "nope"]


def test_resolved_url_is_escaped_and_sanitised():
    urls = {"q": '/m/?a=1&b="2"', "js": "javascript:alert(1)"}
    assert render_markdown("[[q]] [[js]]", urls.get) == (
        f'<p><a class="wikilink" href="/m/?a=1&amp;b=&quot;2&quot;" {REL}>q</a> '
        f'<a class="wikilink" {REL}>js</a></p>\n'
    )


@pytest.mark.parametrize(
    "body",
    [
        "[[a]] [[b|label]] [[c#sec]] [[a]]",
        "x [[ spaced ]] y\n\n- [[item]]\n\n> [[quoted]]",
        "[[x]][[y]] [[[z]]] [[no\nway]]",
    ],
)
def test_same_targets_as_extract_links_outside_code(body):
    calls = []
    render_markdown(body, lambda slug: calls.append(slug))
    assert calls == list(extract_links(body))


# --- Property: whatever the body, the output stays inside the allowlist ---------------------------

ALLOWED = {
    "p": set(),
    "h1": set(),
    "h2": set(),
    "h3": set(),
    "h4": set(),
    "h5": set(),
    "h6": set(),
    "hr": set(),
    "br": set(),
    "blockquote": set(),
    "ul": set(),
    "ol": {"start"},
    "li": set(),
    "pre": set(),
    "code": set(),
    "em": set(),
    "strong": set(),
    "del": set(),
    "s": set(),
    "a": {"href", "title", "class", "rel"},
    "span": {"title", "class"},
    "table": set(),
    "thead": set(),
    "tbody": set(),
    "tr": set(),
    "th": {"class"},
    "td": {"class"},
}
SAFE_HREF = re.compile(r"^(https?:|mailto:|[^:]*$|[^:]*[/?#])", re.IGNORECASE)


class _Checker(HTMLParser):
    def handle_starttag(self, tag, attrs):
        assert tag in ALLOWED, tag
        for name, value in attrs:
            assert name in ALLOWED[tag], (tag, name)
            if name == "href":
                assert SAFE_HREF.match(value), value
            if name == "class" and tag in ("th", "td"):
                assert value in ("align-left", "align-center", "align-right"), value
            elif name == "class":
                assert set(value.split()) <= {"wikilink", "missing"}, value
            if name == "rel":
                assert value == LINK_REL


def assert_safe(html):
    checker = _Checker()
    checker.feed(html)
    checker.close()


FRAGMENTS = [
    *"<>\"'`[]()!*_~|#-:/=&\\ \n\t",
    "[[",
    "]]",
    "deploy",
    "javascript:",
    "JaVaScRiPt:alert(1)",
    "data:text/html,",
    "onerror=",
    "<script>",
    "</script>",
    "<img src=x ",
    '<a href="',
    "https://e.com",
    "mailto:",
    "```",
    "    ",
    "|-|",
    "<!--",
    "&#106;",
    "&lt;",
    "\x00",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
def test_any_body_renders_inside_the_allowlist(body):
    assert_safe(render_markdown(body, resolve))
    assert_safe(render_markdown(body, {"deploy": "javascript:alert(1)"}.get))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_any_text_renders_inside_the_allowlist(body):
    assert_safe(render_markdown(body, resolve))
