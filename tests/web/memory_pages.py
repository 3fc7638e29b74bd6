"""Helpers shared by the memory page tests: the page as a person reads it, files on disk."""

from __future__ import annotations

import os
import re
import time
from html import unescape
from pathlib import Path

from django.urls import reverse

from memapp.memdir.store_files import checksum
from memapp.stores.models import Store

DAY = 86_400
STALENESS = (
    "This memory is 10 days old. Memories are point-in-time observations, not live state: "
    "claims about code behavior or file:line citations may be outdated. Verify against the "
    "current code before asserting them as fact."
)
INDEX = (
    "# Alice's memory\n"
    "- [Role](user_role.md) — who Alice is\n"
    "- [Real DB](feedback_tests.md) — no mocks\n"
    "\n"
    "Notes kept by hand stay as they are.  \n"
)


def root(store: Store) -> Path:
    return Path(store.path)


def text(response) -> str:
    """The page as a person reads it: tags dropped, entities decoded, whitespace collapsed."""
    html = re.sub(r"</?(?:a|code|span|strong|em)\b[^>]*>", "", response.content.decode())
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def pre(response, selector: str) -> str:
    match = re.search(rf"<pre {selector}>(.*?)</pre>", response.content.decode(), re.S)
    assert match, f"no <pre {selector}> on the page"
    return unescape(match.group(1))


def base_sha256(response) -> str:
    page = response.content.decode()
    match = re.search(r'name="base_sha256" value="(sha256:[0-9a-f]{64})"', page)
    assert match, "no base_sha256 in the form"
    return match.group(1)


def url(name: str, store: Store, path: str | None = None) -> str:
    kwargs = {"store_id": store.pk} | ({"path": path} if path else {})
    return reverse(name, kwargs=kwargs)


def set_age(path: Path, days: float) -> None:
    stamp = time.time() - days * DAY
    os.utime(path, (stamp, stamp))


def files_on_disk(base: Path) -> dict[str, bytes]:
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def sha256(path: Path) -> str:
    return checksum(path.read_bytes())
