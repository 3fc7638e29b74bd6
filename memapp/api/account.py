"""Agent API: who a token belongs to, and revoking it (`memhub-agent logout`)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version

from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework import status
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memapp.api import serializers as s
from memapp.stores.tokens import do_revoke_api_token


@extend_schema(
    operation_id="getAccount",
    summary="The token's user, the token, and the server's version",
    tags=["account"],
    responses=s.MeSerializer,
)
@api_view(["GET"])
def me(request: Request) -> Response:
    """Who the token belongs to, which token it is, and the server's version."""
    token = request.auth
    return Response(
        {
            "username": request.user.get_username(),
            "token": {
                "name": token.name,
                "prefix": token.prefix,
                "created_at": token.created_at,
                "last_used_at": token.last_used_at,
            },
            "version": memhub_version(),
        }
    )


@extend_schema(
    operation_id="revokeToken",
    summary="Revoke the token this request carries",
    tags=["account"],
    responses={204: None},
)
@api_view(["DELETE"])
def revoke_token(request: Request) -> Response:
    """Revoke the token this request carries (`memhub-agent logout`)."""
    do_revoke_api_token(request.auth)
    return Response(status=status.HTTP_204_NO_CONTENT)


def memhub_version() -> str:
    try:
        return package_version("memhub")
    except PackageNotFoundError:
        return "unknown"
