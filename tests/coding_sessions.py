"""Real-shaped coding sessions for the session-summary tests: a person's requests, the agent's
replies, file reads with real-looking source, edits, test runs (some failing, with
`is_error`), greps — as Claude Code writes them, sized in tokens as memhub estimates them
(characters / 4 of what it keeps)."""

from __future__ import annotations

from tests.transcripts import Transcript

FIRST_TASK = (
    "Add rate limiting to the widgets API: at most 100 requests per minute per API token, "
    "answered with 429 and a Retry-After header past the limit."
)
FIRST_REQUESTS = [
    FIRST_TASK,
    "Use a sliding window, not a fixed one; bursts at the minute boundary must not pass.",
    "Keep the counters in Redis, the app already has a client in widgets/cache.py.",
]
LATER_REQUESTS = [
    "Now make the limit configurable per project with WIDGETS_RATE_LIMIT.",
    "Document the rate limiter in docs/api.md, with an example 429 answer.",
    "Run the whole suite and tell me the p95 latency of the limiter.",
    "The staging deploy failed on the migration, look at deploy.log.",
]
MODULES = ["ratelimit", "cache", "views", "settings", "middleware", "tokens", "urls"]


def source(module: str, n: int) -> str:
    """About 3,000 characters of Python, as a file read shows it (numbered lines)."""
    lines = [
        f'"""widgets.{module}: part {n} of the API."""',
        "",
        "from __future__ import annotations",
    ]
    for i in range(12):
        lines += [
            "",
            f"def {module}_step_{n}_{i}(request, window: int = 60) -> dict:",
            f'    """Step {i} of {module}: count the request in the sliding window."""',
            f"    key = f'{module}:{{request.token}}:{{window}}'",
            "    return {'key': key, 'count': cache.incr(key), 'window': window}",
        ]
    return "\n".join(f"{number:>5}→{line}" for number, line in enumerate(lines, 1))


def _round(t: Transcript, request: str | None, n: int) -> None:
    if request:
        t.user(request)
    module = MODULES[n % len(MODULES)]
    path = f"{t.cwd}/widgets/{module}.py"
    t.assistant(f"Looking at widgets/{module}.py to see where step {n} belongs.")
    call = t.tool_use("Read", {"file_path": path})
    t.tool_result(call, source(module, n))
    call = t.tool_use("Grep", {"pattern": f"def {module}_step", "path": f"{t.cwd}/widgets"})
    t.tool_result(call, "\n".join(f"widgets/{module}.py:{4 + 5 * i}" for i in range(12)))
    call = t.tool_use(
        "Edit",
        {"file_path": path, "old_string": "window: int = 60", "new_string": "window: int"},
    )
    t.tool_result(call, f"The file {path} has been updated.")
    call = t.tool_use("Bash", {"command": f"pytest tests/test_{module}.py -q"})
    if n % 5 == 3:
        t.tool_result(
            call,
            f"Exit code 1\nFAILED tests/test_{module}.py::test_burst_{n} - AssertionError: "
            "429 != 200\n1 failed, 11 passed in 0.84s",
            error=True,
        )
        t.assistant(f"test_burst_{n} fails: the window counted the boundary twice. Fixing the key.")
    else:
        t.tool_result(call, f"............ [100%]\n12 passed in 0.{n % 9 + 1}1s")
        t.assistant(f"Step {n} of {module} is in and its tests pass.")


def grow(t: Transcript, tokens: int, requests: list[str], start: int = 0) -> int:
    """Work rounds (each request starts one, then more rounds) until the session holds about
    `tokens` more tokens; the number of the next round."""
    n, added = start, 0
    pending = list(requests)
    before = _size(t)
    while added < tokens * 4:
        _round(t, pending.pop(0) if pending else None, n)
        n += 1
        added = _size(t) - before
    return n


def _size(t: Transcript) -> int:
    """The characters memhub keeps of the transcript (what its token estimate counts)."""
    from memapp.memdir.session_summary import entry_tokens
    from memapp.memdir.transcripts import EntryError, parse_entry

    total = 0
    for raw in t.entries:
        try:
            entry = parse_entry(raw)
        except EntryError:
            continue
        total += entry_tokens(entry) * 4
    return total
