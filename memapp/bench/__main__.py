"""memhub's benchmark command.

    python -m memapp.bench [--sizes 200,2000,20000] [--runs 5] [--web] [--team] [--live]
                           [--hooks] [--lifecycle] [--consolidation] [--summary] [--mcp]
                           [--scale [--scale-factor 1]]

The core sections (:mod:`memapp.bench.core`) always run; ``--web`` adds the store page, the
mirror, recall and prompt over HTTP (:mod:`memapp.bench.web`), ``--team`` a push and a pull
through a bare repository (:mod:`memapp.bench.team`), ``--live`` the live mirror
(:mod:`memapp.bench.live`), ``--hooks`` the Claude Code hooks and warm workers on a store of
the smallest size (:mod:`memapp.bench.hooks`), ``--lifecycle`` the Stop hook, transcript
ingest and past-context search (:mod:`memapp.bench.lifecycle`), ``--consolidation`` the gates,
the request and applying a proposal (:mod:`memapp.bench.consolidation`), ``--summary`` the
offline session summary of a 5,000-entry transcript (:mod:`memapp.bench.summary`, also part of
``--lifecycle``), ``--mcp`` the MCP endpoint's tools/list and recall (:mod:`memapp.bench.mcp`),
``--scale`` every page and API call on a database of a big deployment
(:mod:`memapp.bench.scale`).
Nothing in the product imports this package.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import yaml

from memapp.bench import core
from memapp.bench.common import format_table, generate_corpus, load_average, run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m memapp.bench",
        description="Benchmarks of the memory core and, with --web, of the web app and API.",
    )
    parser.add_argument("--sizes", default="200,2000,20000", help="corpus sizes, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--web",
        action="store_true",
        help="also measure the store page, the mirror, recall and prompt over HTTP (Django)",
    )
    parser.add_argument(
        "--load-seconds",
        type=float,
        default=10.0,
        help="--web: seconds of each run of recall load against the HTTP server (0: skip it)",
    )
    parser.add_argument(
        "--clients", type=int, default=4, help="--web: concurrent connections of the load test"
    )
    parser.add_argument(
        "--team",
        action="store_true",
        help="also measure team sync: push, pull, the secret gate and the protocol (Django, git)",
    )
    parser.add_argument(
        "--team-files", type=int, default=1000, help="--team: memory files pushed and pulled"
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="also measure the live mirror: a new file to the store page, idle CPU (Django)",
    )
    parser.add_argument(
        "--hooks",
        action="store_true",
        help="also measure the hooks: start-up, the model within their budget, warm workers",
    )
    parser.add_argument(
        "--hook-prompts", type=int, default=20, help="--hooks: prompts asked with the model on"
    )
    parser.add_argument(
        "--hook-command",
        default="",
        help="--hooks: the memhub-agent command to measure (default: this checkout's), e.g. "
        "an older build's, to compare",
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="also measure the offline session summary of a 5,000-entry transcript (no Django)",
    )
    parser.add_argument(
        "--lifecycle",
        action="store_true",
        help="also measure the Stop hook, transcript ingest and past-context search (Django)",
    )
    parser.add_argument(
        "--sessions", type=int, default=1000, help="--lifecycle: sessions of 200 messages searched"
    )
    parser.add_argument(
        "--consolidation",
        action="store_true",
        help="also measure the consolidation gates, request and applying a proposal (Django)",
    )
    parser.add_argument(
        "--stores", type=int, default=1000, help="--consolidation: stores whose gates are checked"
    )
    parser.add_argument(
        "--store-files",
        type=int,
        default=2000,
        help="--consolidation: files of the store consolidated",
    )
    parser.add_argument(
        "--mcp",
        action="store_true",
        help="also measure the MCP endpoint: tools/list and a recall call (Django)",
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="also measure every page and API call on a database of 200 people, 100,000 "
        "memories, 10,000 sessions and 1,000,000 events (Django)",
    )
    parser.add_argument(
        "--scale-factor",
        type=float,
        default=1.0,
        help="--scale: multiply every count of its database (0.01 for a quick run)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        core.worker(*args.worker)
        return 0
    sizes = [int(size) for size in args.sizes.replace("_", "").split(",") if size.strip()]
    load_before = load_average()
    legends = []
    django_sections = ("web", "mcp", "live", "team", "hooks", "lifecycle", "consolidation", "scale")
    with contextlib.ExitStack() as stack:
        sections = list(core.SECTIONS)
        if any(getattr(args, name) for name in django_sections):
            from memapp.bench import web  # Django is set up only when asked for

            # One data dir for the whole run: every section's own use of it nests in this one
            # (Django can be set up once per process), and it outlives them all.
            stack.enter_context(web.django_on_temp_data_dir())
        if args.web:
            sections += stack.enter_context(
                web.web_sections(load_seconds=args.load_seconds, clients=args.clients)
            )
            legends.append(web.LEGEND)
        if args.mcp:
            from memapp.bench import mcp

            sections.append(mcp.bench_mcp)
            legends.append(mcp.LEGEND)
        if args.live:
            from memapp.bench import live

            sections.append(live.bench_live)
            legends.append(live.LEGEND)
        rows = run(sizes, max(args.runs, 1), sections, progress=not args.quiet)
        if args.team:
            from memapp.bench import team  # git only when asked for

            rows += team.run(args.team_files, max(args.runs, 1), progress=not args.quiet)
            legends.append(team.LEGEND)
        if args.hooks:
            from memapp.bench import hooks

            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="memhub-bench-")))
            corpus = generate_corpus(
                tmp / "memory", min(sizes, default=200), progress=not args.quiet
            )
            rows += hooks.run(
                corpus,
                max(args.runs, 1),
                prompts=args.hook_prompts,
                hook_command=args.hook_command,
            )
            legends.append(hooks.LEGEND)
        if args.lifecycle:
            from memapp.bench import lifecycle  # the HTTP server and the client

            rows += lifecycle.run(max(args.runs, 1), sessions=args.sessions)
            legends.append(lifecycle.LEGEND)
        if args.summary or args.lifecycle:
            from memapp.bench import summary

            rows += summary.bench_offline_summary(max(args.runs, 1))
            legends.append(summary.LEGEND)
        if args.consolidation:
            from memapp.bench import consolidation

            rows += consolidation.run(max(args.runs, 1), args.stores, args.store_files)
            legends.append(consolidation.LEGEND)
        if args.scale:
            from memapp.bench import scale

            rows += scale.run(args.scale_factor, max(args.runs, 1), progress=not args.quiet)
            legends.append(scale.LEGEND)
    libyaml = "libyaml" if hasattr(yaml, "CSafeLoader") else "pure-Python YAML"
    print(
        f"memhub bench: Python {platform.python_version()}, PyYAML {yaml.__version__} ({libyaml}),"
        f" {os.cpu_count()} CPUs, median of {args.runs} runs"
    )
    print(f"load average (1/5/15 min): {load_before} before, {load_average()} after")
    print()
    print(format_table(rows))
    print()
    print("floors: cold scan = os.walk + stat + first 30 lines + yaml.load(CSafeLoader), each in a")
    print("fresh process; warm rescan = scandir walk + stat; manifest = bare f-string per header;")
    print("index = split, keep 200 lines, join, cut to 25,000 bytes.")
    for legend in legends:
        print()
        print(legend)
    return 1 if args.check and any(row.met is False for row in rows) else 0


if __name__ == "__main__":
    # A stopped run (kill, a CI timeout) unwinds like an interrupted one: its HTTP server stopped,
    # its data dirs removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    sys.exit(main())
