"""axe-core in the browser tests: `check_accessibility(page)` fails a test on any critical or
serious violation of the page as it is now.

axe comes bundled in the `axe-playwright-python` wheel (never fetched at test time); it is
injected into the page, so it sees the page exactly as the person would, dark mode included.
"""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe

BLOCKING = ("critical", "serious")
_axe = Axe()


def accessibility_violations(page, impacts: tuple[str, ...] = BLOCKING) -> list[dict]:
    """axe's violations of the given impacts on the current page (WCAG 2.x A and AA rules
    plus axe's best practices, which hold the skip link and heading order)."""
    results = _axe.run(page, options={"resultTypes": ["violations"]})
    return [v for v in results.response["violations"] if v["impact"] in impacts]


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


def check_accessibility(page, where: str = "") -> None:
    """Fail with a readable report when axe finds a critical or serious violation."""
    violations = accessibility_violations(page)
    label = where or page.url
    assert not violations, f"axe on {label}:\n{describe(violations)}"
