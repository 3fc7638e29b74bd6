"""axe-core in the browser tests: `check_accessibility(page)` fails a test on any critical or
serious violation of the page as it is now.

axe comes bundled in the `axe-playwright-python` wheel (never fetched at test time); it is
injected into the page, so it sees the page exactly as the person would, dark mode included.
"""

from __future__ import annotations

import json

from axe_playwright_python.sync_playwright import Axe

BLOCKING = ("critical", "serious")
# Best practices axe rates moderate (or minor) that memhub holds to all the same: headings in
# order, one h1, one main landmark, a skip link that leads somewhere, no column header without
# text.
ALSO_ENFORCED = frozenset(
    {
        "heading-order",
        "page-has-heading-one",
        "landmark-one-main",
        "skip-link",
        "empty-table-header",
    }
)
# The rules whose outcome depends on the colour scheme: the rest see the same markup and layout
# in dark mode as in light.
COLOUR_RULES = ("color-contrast", "link-in-text-block")
AXE_SCRIPT = Axe().axe_script


def preload_axe(context) -> None:
    """Put axe into every page `context` opens, so a walk over many pages does not send its
    half a megabyte to each one."""
    context.add_init_script(script=AXE_SCRIPT)


def accessibility_violations(
    page,
    impacts: tuple[str, ...] = BLOCKING,
    enforced: frozenset[str] = ALSO_ENFORCED,
    only: tuple[str, ...] = (),
    without: tuple[str, ...] = (),
) -> list[dict]:
    """axe's violations on the current page of the given impacts, and of the `enforced` rules
    whatever their impact (WCAG 2.x A and AA rules plus axe's best practices); `only` those
    rules when given, and never the rules `without` names."""
    if page.evaluate("typeof window.axe === 'undefined'"):
        page.evaluate(AXE_SCRIPT)
    options: dict = {"resultTypes": ["violations"]}
    if only:
        options["runOnly"] = {"type": "rule", "values": list(only)}
    if without:
        options["rules"] = {rule: {"enabled": False} for rule in without}
    results = page.evaluate(f"axe.run(document, {json.dumps(options)})")
    return [v for v in results["violations"] if v["impact"] in impacts or v["id"] in enforced]


def describe(violations: list[dict]) -> str:
    """One line per element: the rule, its impact, the element and what axe says to fix."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            lines.append(
                f"{violation['id']} ({violation['impact']}): {', '.join(map(str, node['target']))}"
                f" — {node.get('failureSummary', '').replace(chr(10), ' ')}"
            )
    return "\n".join(lines)


def check_accessibility(page, where: str = "", enforced: frozenset[str] = ALSO_ENFORCED) -> None:
    """Fail with a readable report when axe finds a critical or serious violation, or breaks
    one of the `enforced` rules."""
    violations = accessibility_violations(page, enforced=enforced)
    label = where or page.url
    assert not violations, f"axe on {label}:\n{describe(violations)}"


_CHART_FILLS = """() => {
  const names = new Set();
  for (const sheet of document.styleSheets) {
    for (const rule of sheet.cssRules) {
      for (const part of (rule.selectorText || "").split(",")) {
        const m = part.trim().match(/^\\.(c-[a-z]+)$/);
        if (m) names.add(m[1]);
      }
    }
  }
  const card = document.querySelector(".card");
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  card.appendChild(svg);
  const fills = {};
  for (const name of names) {
    const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    rect.setAttribute("class", name);
    svg.appendChild(rect);
    fills[name] = getComputedStyle(rect).fill;
  }
  svg.remove();
  return {background: getComputedStyle(card).backgroundColor, fills};
}"""


def _luminance(css_colour: str) -> float:
    """WCAG relative luminance of an `rgb(r, g, b)` colour as the browser computes it."""
    red, green, blue = (
        int(part) for part in css_colour[css_colour.index("(") + 1 : -1].split(",")[:3]
    )

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(red) + 0.7152 * channel(green) + 0.0722 * channel(blue)


def contrast(first: str, second: str) -> float:
    lighter, darker = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def chart_colour_contrasts(page) -> dict[str, float]:
    """Each chart colour class (`.c-*` in the page's CSS) against the card it is drawn on."""
    found = page.evaluate(_CHART_FILLS)
    return {name: contrast(fill, found["background"]) for name, fill in found["fills"].items()}
