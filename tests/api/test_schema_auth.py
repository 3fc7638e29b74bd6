"""The OpenAPI schema says how to authenticate (a bearer token on every agent operation), and
drf-spectacular generates it without a warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.api.test_response_schemas import openapi

ROOT = Path(__file__).resolve().parents[2]


# Getting a token is the point of the browser login's two operations: they take none.
TOKENLESS = {"startDeviceLogin", "pollDeviceLogin"}


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
    assert {o["operationId"] for o in operations if "security" not in o} == TOKENLESS
    assert all(o["security"] == [{"bearer": []}] for o in operations if "security" in o)


def test_the_schema_is_valid_without_a_single_warning(tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn"]
        + ["--file", os.devnull],
        cwd=ROOT,
        env={**os.environ, "MEMHUB_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and "Error" not in result.stderr


def test_every_json_answer_in_the_docs_has_a_real_sample():
    """An answer typed only as "an object" would show Redoc's `{"property1": null, …}`."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    bare = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for code, answer in operation["responses"].items():
                body = answer.get("content", {}).get("application/json")
                shape = (body or {}).get("schema", {})
                typed = "properties" in shape or "$ref" in shape
                sampled = body and ("examples" in body or "example" in body)
                if body and not typed and not sampled:
                    bare.append(f"{method.upper()} {path} {code}")
    # A map field of an answer (key → checksum, reason → count) shows an example too; request
    # bodies have their operation's example instead.
    for name, component in schema["components"]["schemas"].items():
        for field, shape in component.get("properties", {}).items():
            keyed = shape.get("type") == "object" and "properties" not in shape
            if keyed and "example" not in shape and not name.endswith("Request"):
                bare.append(f"{name}.{field}")
    assert not bare, bare
