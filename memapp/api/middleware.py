"""Answer oversized API bodies with 413 and the API's error shape before Django reads them."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpResponse


def api_body_limit(get_response):
    def middleware(request):
        if request.path_info.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            if length > limit:
                body = {
                    "error": {
                        "code": "too_large",
                        "message": f"Request body is {length:,} bytes; the limit is {limit:,}.",
                        "details": {"max_bytes": limit},
                    }
                }
                return HttpResponse(json.dumps(body), status=413, content_type="application/json")
        return get_response(request)

    return middleware
