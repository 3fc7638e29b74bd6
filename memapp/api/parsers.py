"""The API's JSON parser: DRF's, with nesting bounded before anything recurses over it."""

from __future__ import annotations

import io
import re

from rest_framework.parsers import JSONParser
from rest_framework.status import HTTP_400_BAD_REQUEST

# Deeper than any body the API takes (a transcript entry's tool input is a dozen levels), far
# below Python's recursion limit, which json.loads and the serializers would otherwise hit.
MAX_JSON_DEPTH = 64

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


def json_depth(data: bytes) -> int:
    """How deep the arrays and objects of JSON text `data` nest (brackets inside strings do not
    count); malformed text gets a number too, and json.loads refuses it afterwards."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", data))
    depth = deepest = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


class BoundedJSONParser(JSONParser):
    """400 `too_deep` for a body nested over MAX_JSON_DEPTH, where json.loads and the checks
    after it would raise RecursionError (a 500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        # Imported here: memapp.api.errors imports DRF's views, which import this parser.
        from memapp.api.errors import ApiError

        data = stream.read()
        if data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH and (
            json_depth(data) > MAX_JSON_DEPTH
        ):
            raise ApiError(
                HTTP_400_BAD_REQUEST,
                "too_deep",
                f"The JSON body nests deeper than {MAX_JSON_DEPTH} levels.",
                {"max_depth": MAX_JSON_DEPTH},
            )
        return super().parse(io.BytesIO(data), media_type, parser_context)
