"""Benchmarks of the live mirror (``python -m memapp.bench --live``).

For each size, a generated corpus becomes the private store of a Claude Code memory base
(``projects/-bench/memory/``) that the live mirror discovers and then watches, as the background
process of ``manage.py serve`` does (the task clock runs beside it):

- discovery of the base at start;
- a new file written into the store until it is on the store page (the page fetched through
  Django's test client until the file's name is in it): ≤ 2 s at 20,000 files;
- the CPU the watching process uses over 10 s in which nothing changes: ≤ 2 % of one core.
"""

from __future__ import annotations

import resource
import statistics
import tempfile
import threading
import time
from pathlib import Path

from memapp.bench.common import Corpus, Row, timed

__all__ = ["LEGEND", "bench_live"]

LEGEND = """\
live mirror (--live): the corpus is the private store of a memory base watched by the live
mirror (watchfiles/inotify) with the task clock running; "new file on the store page" is the
time from writing a file to the store page listing it (page fetched every 20 ms); "idle CPU" is
the watching process' user + system CPU over 10 s with no change, as % of one core."""

IDLE_SECONDS = 10.0
LIVE_LIMIT_S = 2.0
IDLE_LIMIT_PERCENT = 2.0
TARGET_FROM_FILES = 20_000


def bench_live(corpus: Corpus, runs: int) -> list[Row]:
    """Discovery, change-to-page latency and idle CPU of the live mirror on this corpus."""
    with tempfile.TemporaryDirectory(prefix="memhub-bench-live-", dir=corpus.root.parent) as tmp:
        base = Path(tmp) / "claude"
        memory = base / "projects" / "-bench" / "memory"
        memory.parent.mkdir(parents=True)
        corpus.root.rename(memory)  # the corpus, in place in a memory base (put back below)
        try:
            return _measure(corpus, base, memory, runs)
        finally:
            memory.rename(corpus.root)


def _measure(corpus: Corpus, base: Path, memory: Path, runs: int) -> list[Row]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from memapp.background import Clock
    from memapp.stores.live import LiveMirror
    from memapp.stores.models import Store

    size = corpus.size
    user, _ = get_user_model().objects.get_or_create(
        username="bench-live", defaults={"is_superuser": True}
    )
    user.is_superuser = True
    user.save(update_fields=["is_superuser"])
    mirror = LiveMirror(base, rescan_every=3600)
    discovery = timed(mirror.catch_up)
    store = Store.objects.get(path=str(memory))
    store.owner = user
    store.save(update_fields=["owner"])
    client = Client(HTTP_HOST="127.0.0.1")  # DEBUG is off: a host the settings allow
    client.force_login(user)
    page = f"/stores/{store.pk}/"

    stop = threading.Event()
    threads = [
        threading.Thread(target=mirror.watch, args=(stop,), daemon=True),
        threading.Thread(target=Clock().run, args=(stop,), daemon=True),
    ]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)  # the watcher is set up
        latencies = [_until_on_page(client, page, memory, f"live_{i:03}") for i in range(runs)]
        idle = _idle_cpu_seconds()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
        for i in range(runs):
            (memory / f"live_{i:03}.md").unlink(missing_ok=True)
    target = size >= TARGET_FROM_FILES
    note = "" if target else f"(target at ≥ {TARGET_FROM_FILES:,} files)"
    return [
        Row(size, "live: discovery at start", discovery),
        Row(size, "live: new file on the store page (median)", statistics.median(latencies)),
        Row(
            size,
            f"live: new file on the store page (max of {len(latencies)})",
            max(latencies),
            limit=LIVE_LIMIT_S if target else None,
            note=note,
        ),
        Row(
            size,
            f"live: idle CPU over {IDLE_SECONDS:g} s",
            idle,
            limit=IDLE_SECONDS * IDLE_LIMIT_PERCENT / 100,
            note=f"{100 * idle / IDLE_SECONDS:.2f} % of one core (≤ {IDLE_LIMIT_PERCENT:g} %)",
        ),
    ]


def _until_on_page(client, page: str, memory: Path, stem: str, timeout: float = 30.0) -> float:
    name = f"{stem}.md"
    start = time.perf_counter()
    (memory / name).write_text(
        f"---\nname: {stem}\ndescription: written by the live benchmark\ntype: project\n---\n"
        "Body.\n",
        encoding="utf-8",
    )
    while time.perf_counter() - start < timeout:
        if name in client.get(page).content.decode():
            return time.perf_counter() - start
        time.sleep(0.02)
    raise RuntimeError(f"{name} was not on {page} after {timeout:.0f} s")


def _idle_cpu_seconds() -> float:
    """CPU seconds this process (the watcher and the clock; the main thread sleeps) uses."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(IDLE_SECONDS)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
