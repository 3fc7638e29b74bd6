"""The browser tests' fixtures (Chromium itself is set up in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.browser.screens import shoot


@pytest.fixture
def screenshot(page):
    """`screenshot(name)`: the whole page as it is now, under test-artifacts/."""
    return lambda name: shoot(page, name)
