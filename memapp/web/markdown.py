"""Memory bodies as safe HTML for the review UI.

A body is any text at all: it may hold raw HTML, scripts, ``javascript:`` links or megabytes of
input. :func:`render_markdown` renders it as CommonMark (plus tables and strikethrough) with raw
HTML turned off, so HTML in a body is shown as text, then passes the result through nh3 with a
small allowlist as a second line of defence.

``[[target]]`` wiki links are parsed by a markdown-it inline rule, so links in code spans, fenced
or indented code are left alone and the text is escaped like any other. A link to a memory that
exists becomes ``<a class="wikilink">``; a link to one that does not exist yet becomes
``<span class="wikilink missing">`` (it marks something worth writing).

Choices where the brief is silent:

- ``[[target|label]]`` shows ``label``; ``[[target#section]]`` shows ``target#section``. Either
  way the memory looked up is ``target``, as in :func:`memapp.memdir.frontmatter.extract_links`.
- Without a ``resolve_link`` every wiki link becomes ``<span class="wikilink">`` (not "missing":
  nothing was looked up). Each target is looked up once per render.
- Links do not nest: as with CommonMark's own inner links, in ``[a [[b]]](url)`` the wiki link
  wins and the outer brackets stay text.
- Images are not rendered (nothing remote is fetched by viewing a memory): ``![alt](url)`` shows
  as ``!`` followed by a link to ``url``.
- Fenced code keeps no ``language-*`` class; table cells keep ``text-align`` only.
- A body longer than :data:`MAX_MARKDOWN_CHARS` is shown as preformatted text, without
  Markdown or wiki links: markdown-it-py is linear but slow on some shapes (a 1 MB table takes
  5-10 s), and a review page must not hang on one odd file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from memapp.memdir.frontmatter import WIKILINK_RE

__all__ = ["LINK_REL", "MAX_MARKDOWN_CHARS", "render_markdown"]

Resolver = Callable[[str], str | None]

LINK_REL = "noopener noreferrer nofollow"
MAX_MARKDOWN_CHARS = 256_000


_ENV_RESOLVER = "memhub_resolve_link"
_ENV_CACHE = "memhub_resolved"


def _split(inner: str) -> tuple[str, str]:
    """``(target, shown text)`` of a wiki link's inner text; the target as ``extract_links``."""
    text, bar, label = inner.partition("|")
    target = text.split("#", 1)[0].strip()
    shown = label.strip() if bar else text.strip()
    return target, shown or target


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    pos = state.pos
    if not state.src.startswith("[[", pos) or state.linkLevel > 0:
        return False
    match = WIKILINK_RE.match(state.src, pos, state.posMax)
    if match is None:
        return False
    target, shown = _split(match.group(1))
    if not target:
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.meta = {"target": target}
        token.content = shown
    state.pos = match.end()
    return True


def _render_wikilink(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    target: str = token.meta["target"]
    shown = escapeHtml(token.content)
    resolve: Resolver | None = env.get(_ENV_RESOLVER)
    if resolve is None:
        return f'<span class="wikilink">{shown}</span>'
    cache: dict[str, str | None] = env[_ENV_CACHE]
    if target not in cache:
        cache[target] = resolve(target)
    url = cache[target]
    if url is None:
        title = escapeHtml(f"No memory named {target} yet")
        return f'<span class="wikilink missing" title="{title}">{shown}</span>'
    return f'<a class="wikilink" href="{escapeHtml(url)}">{shown}</a>'


def _make_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.disable("image")
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.add_render_rule("wikilink", _render_wikilink)
    md.core.ruler.push("alignment_classes", _alignment_classes)
    return md


def _alignment_classes(state) -> None:
    """A table column's alignment as a class (`align-right`): markdown-it writes a style
    attribute, which the Content-Security-Policy would refuse."""
    for token in state.tokens:
        if token.type in ("th_open", "td_open") and token.attrs.get("style"):
            side = str(token.attrs.pop("style")).removeprefix("text-align:")
            token.attrSet("class", f"align-{side}")


_MD = _make_parser()

_CLEANER = nh3.Cleaner(
    tags={
        *("p", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "br", "blockquote"),
        *("ul", "ol", "li", "pre", "code", "em", "strong", "del", "s", "a", "span"),
        *("table", "thead", "tbody", "tr", "th", "td"),
    },
    attributes={
        "a": {"href", "title"},
        "span": {"title"},
        "ol": {"start"},
    },
    allowed_classes={
        "a": {"wikilink"},
        "span": {"wikilink", "missing"},
        "th": {"align-left", "align-center", "align-right"},
        "td": {"align-left", "align-center", "align-right"},
    },
    url_schemes={"http", "https", "mailto"},
    link_rel=LINK_REL,
    strip_comments=True,
)


def render_markdown(body: str, resolve_link: Resolver | None = None) -> str:
    """A memory body as sanitised HTML.

    ``resolve_link(target)`` gives the URL of the memory a ``[[target]]`` names, or ``None``
    when there is no such memory yet; it is called at most once per target. A body longer than
    :data:`MAX_MARKDOWN_CHARS` comes back as one escaped ``<pre>`` block.
    """
    if len(body) > MAX_MARKDOWN_CHARS:
        return _CLEANER.clean(f"<pre>{escapeHtml(body)}</pre>\n")
    env: dict[str, Any] = {_ENV_RESOLVER: resolve_link, _ENV_CACHE: {}}
    return _CLEANER.clean(_MD.render(body, env))
