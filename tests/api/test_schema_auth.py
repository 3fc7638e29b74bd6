"""The OpenAPI schema says how to authenticate (a bearer token on every agent operation), and
drf-spectacular generates it without warnings about the agent API."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.api.test_response_schemas import openapi

ROOT = Path(__file__).resolve().parents[2]
# Views other apps own; their schema warnings are theirs to fix.
OUTSIDE_THE_AGENT_API = tuple(f"{ROOT}/{app}/" for app in ("teamsync", "snapshots"))
ISSUE = re.compile(r"^(?:(?P<source>.+?): )?(?:Warning|Error)\b")


def test_every_agent_operation_requires_the_bearer_token(client):
    schema = openapi(client)

    assert schema["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A memhub API token: `Authorization: Bearer mh_…`.",
    }
    operations = [
        operation
        for path, methods in schema["paths"].items()
        if path.startswith("/api/v1/")
        for operation in methods.values()
    ]
    assert operations
    assert all(operation["security"] == [{"bearer": []}] for operation in operations)


def test_the_schema_is_valid_and_warns_only_about_views_outside_the_agent_api(tmp_path):
    # Without --fail-on-warn: it would stop before validating, on the other apps' warnings.
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--file", os.devnull],
        cwd=ROOT,
        env={**os.environ, "MEMHUB_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    ours = [
        line
        for line in result.stderr.splitlines()
        if (issue := ISSUE.match(line))
        and not (issue["source"] or "").startswith(OUTSIDE_THE_AGENT_API)
    ]
    assert ours == []
