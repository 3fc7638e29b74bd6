"""The two screens every page is checked on (a desktop and a 390 px phone), and the checks the
browser tests make at each: the page fits the screen's width, axe finds nothing, a screenshot
is saved under test-artifacts/ for a person to look at."""

from __future__ import annotations

from pathlib import Path

from tests.browser.accessibility import accessibility_violations, describe

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"  # CI keeps them

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SCREENS = {"desktop": DESKTOP, "phone": PHONE}


def fits(page) -> bool:
    """Nothing on the page is wider than the screen: no sideways scrolling."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def shoot(page, name: str, part: str = "") -> None:
    """A screenshot of the whole page, or of the screen with `part` scrolled into view (the
    store page lists hundreds of memories below its cards)."""
    ARTIFACTS.mkdir(exist_ok=True)
    if part:
        page.locator(part).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=not part)


def at_both_widths(page, name: str, *, part: str = "", where: str = "", controls=()) -> None:
    """Shoot the page on the phone and on the desktop (`name-phone.png`, `name-desktop.png`),
    leaving it at the desktop's width for the next click. With `where`, axe checks it and it
    must fit the screen at each width. Each of `controls` (locators) must take a click on the
    phone: a trial click, which checks that a person could click it there and clicks nothing.
    Fails, once both widths are seen, with every problem found at either."""
    problems = []
    for screen in ("phone", "desktop"):
        page.set_viewport_size(SCREENS[screen])
        shoot(page, f"{name}-{screen}", part)
        if where:
            if violations := accessibility_violations(page):
                problems.append(f"axe on {where} ({screen}):\n{describe(violations)}")
            if not fits(page):
                problems.append(f"{where} is wider than the {screen} screen")
        if screen == "phone":
            for control in controls:
                control.click(trial=True, timeout=5_000)
    assert not problems, "\n".join(problems)
