"""The API docs read well: each operation has a name a person would choose and a summary, and
each request body an example that the body's own schema accepts."""

from __future__ import annotations

import re

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

METHODS = {"get", "put", "post", "delete", "patch"}


@pytest.fixture
def schema(alice):
    client = APIClient()
    client.force_authenticate(alice)
    return client.get("/api/schema/", {"format": "json"}).json()


def operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield method, path, operation


def test_every_operation_has_a_readable_name_and_a_summary(schema):
    names = {}
    for method, path, operation in operations(schema):
        assert re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", operation["operationId"]), (method, path)
        assert operation.get("summary"), (method, path)
        assert operation.get("tags") and operation["tags"] != ["v1"], (method, path)
        names[operation["operationId"]] = f"{method.upper()} {path}"
    assert names["recall"] == "POST /api/v1/recall"
    assert names["listStores"] == "GET /api/v1/stores/"
    assert names["putTeamMemory"] == "PUT /api/claude_code/team_memory"
    assert len(names) == len(list(operations(schema)))


def test_every_request_body_has_an_example_its_schema_accepts(schema):
    registry = Registry().with_resource("urn:api", DRAFT202012.create_resource(schema))
    bodies = 0
    for method, path, operation in operations(schema):
        if "requestBody" not in operation:
            continue
        content = operation["requestBody"]["content"]["application/json"]
        examples = content.get("examples")
        assert examples, f"{method.upper()} {path} has no example"
        body_schema = content["schema"]
        if "$ref" in body_schema:
            body_schema = {"$ref": "urn:api" + body_schema["$ref"]}
        validator = Draft202012Validator(body_schema, registry=registry)
        for example in examples.values():
            errors = [e.message for e in validator.iter_errors(example["value"])]
            assert not errors, (method, path, errors)
        bodies += 1
    assert bodies == 17
