"""The SDK's own client against a live memhub over Streamable HTTP."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from memapp.stores.models import Project
from memapp.stores.tokens import do_create_api_token
from tests.client.conftest import SLUG, Server, machine_a  # noqa: F401 (a fixture)


def over_http(url: str, token: str | None, work: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run `work` with an SDK client connected to `url` (with `token` as bearer, if any)."""

    async def run() -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await work(client)

    return run_client(run)


def run_client(run: Callable[[], Awaitable[Any]]) -> Any:
    """`anyio.run(run)` on a thread of its own: a browser test earlier in the same pytest
    worker leaves Playwright's event loop running on the main thread, where no other can."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, run).result()


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.MEMHUB_DATA_DIR = tmp_path / "data"
    settings.MEMHUB_DISCOVER = False
    return settings.MEMHUB_DATA_DIR


@pytest.fixture
def server(live_server, data_dir, alice) -> Server:
    _, token = do_create_api_token(alice, "laptop")
    return Server(live_server.url, token)


@pytest.fixture
def project(alice, bob) -> Project:
    """acme/widgets, with alice and bob as members."""
    project = Project.objects.create(key="acme-widgets", repo_slug=SLUG, name="widgets")
    project.members.add(alice, bob)
    return project
