"""The client is pure Python: it must run on a machine where memhub's server is not set up."""

from __future__ import annotations

import subprocess
import sys

from memapp.client.hooks import HOOK_BUDGET, hook_budget, process_age


def test_the_client_never_imports_django():
    code = (
        "import sys\n"
        "import memapp.client.cli, memapp.client.sync, memapp.client.hooks\n"
        "roots = {m.split('.')[0] for m in sys.modules}\n"
        "loaded = sorted(roots & {'django', 'rest_framework'})\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin"}
    )

    assert result.returncode == 0, result.stderr


def test_the_prompt_and_stop_hooks_load_nothing_a_request_does_not_need():
    """A hook starts a process on every prompt (docs/design.md §16): its modules leave out the
    slow-loading ones it has no use for (`python -X importtime` showed each in the hooks)."""
    code = (
        "import sys\n"
        "from memapp.client import cli, hooks, recall_hook, agent_hooks, transcript_hook\n"
        "for hook in [*hooks.HOOKS.values(), *hooks.GEMINI_HOOKS.values()]:\n"
        "    if 'session' not in hook.handler:\n"
        "        hook.load()\n"
        "slow = {'argparse', 'dataclasses', 'inspect', 'concurrent', 'subprocess', 'yaml',\n"
        "        'http', 'email', 'ssl', 'hashlib', 'string', 'socket', 'selectors', 'typing',\n"
        "        'threading'}\n"
        "loaded = sorted(slow & {m.split('.')[0] for m in sys.modules})\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PATH": "/usr/bin"}
    )

    assert result.returncode == 0, result.stderr


def test_the_hook_budget_can_be_raised_for_a_slow_selector():
    assert hook_budget({}) == HOOK_BUDGET < 1.0
    assert hook_budget({"MEMHUB_HOOK_TIMEOUT": "5"}) == 5.0
    assert hook_budget({"MEMHUB_HOOK_TIMEOUT": "-1"}) == HOOK_BUDGET
    assert hook_budget({"MEMHUB_HOOK_TIMEOUT": "soon"}) == HOOK_BUDGET


def test_the_hook_budget_counts_from_the_start_of_the_process():
    assert 0.0 < process_age() < 24 * 3600 * 365
