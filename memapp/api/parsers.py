"""The API's JSON parser: DRF's, with nesting bounded before anything recurses over it."""

from __future__ import annotations

import io
import re

from rest_framework.parsers import JSONParser
from rest_framework.status import HTTP_400_BAD_REQUEST

# Deeper than any body the API takes (a transcript entry's tool input is a dozen levels), far
# below Python's recursion limit, which json.loads and the serializers would otherwise hit.
MAX_JSON_DEPTH = 64

# A JSON string, written as an unrolled loop: one alternation per character would be ten
# times slower over a body of long strings.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# bytes.translate tables: every byte but a bracket deleted, and `{}` read as `[]` (a body that
# mixes them up is malformed, and json.loads refuses it afterwards).
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_ONE_KIND = bytes.maketrans(b"{}", b"[]")


def json_depth(data: bytes, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep the arrays and objects of JSON text `data` nest (brackets inside strings do not
    count), up to `limit + 1`. Each round removes the innermost pairs with bytes.replace, in C:
    a loop over every bracket in Python would take seconds on a large transcript."""
    brackets = _STRING.sub(b"", data).translate(_ONE_KIND, _NOT_BRACKETS)
    depth = 0
    while depth <= limit:
        fewer = brackets.replace(b"[]", b"")
        if len(fewer) == len(brackets):
            break
        brackets, depth = fewer, depth + 1
    return depth


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
