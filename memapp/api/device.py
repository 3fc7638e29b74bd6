"""The device authorization grant (RFC 8628) of `memhub-agent login`, in memhub's JSON and error
shape: the error codes are the RFC's (docs/design.md §26). No token is needed: getting one is
the point."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.decorators import (
    api_view,
    authentication_classes,
    permission_classes,
    throttle_classes,
)
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle

from memapp.api import examples
from memapp.api.errors import ApiError
from memapp.api.serializers import Text
from memapp.stores.device_auth import (
    CODE_LIFETIME,
    DeviceFlowError,
    do_poll_device,
    do_start_device_authorization,
)


class DeviceRateThrottle(AnonRateThrottle):
    """Per address: nobody fills the table with codes or guesses device codes."""

    scope = "device"


class DeviceCodeRequest(serializers.Serializer):
    client_name = Text(max_length=100, required=False, default="device")


class DeviceTokenRequest(serializers.Serializer):
    device_code = Text(max_length=100)


@extend_schema(
    operation_id="startDeviceLogin",
    summary="Start a browser login (RFC 8628 device authorization)",
    tags=["account"],
    auth=[],
    request=DeviceCodeRequest,
    examples=[examples.DEVICE_CODE],
    responses=inline_serializer(
        "DeviceCode",
        {
            "device_code": Text(),
            "user_code": Text(),
            "verification_uri": serializers.URLField(),
            "verification_uri_complete": serializers.URLField(),
            "expires_in": serializers.IntegerField(),
            "interval": serializers.IntegerField(),
        },
    ),
)
@api_view(["POST"])
@authentication_classes([])
@permission_classes([AllowAny])
@throttle_classes([DeviceRateThrottle])
def device_code(request: Request) -> Response:
    data = DeviceCodeRequest(data=request.data)
    if not data.is_valid():
        raise ApiError(400, "bad_request", "Invalid request.", data.errors)
    row, code = do_start_device_authorization(
        data.validated_data["client_name"], request.META.get("HTTP_USER_AGENT", "")
    )
    uri = request.build_absolute_uri(reverse("device"))
    return Response(
        {
            "device_code": code,
            "user_code": row.user_code,
            "verification_uri": uri,
            "verification_uri_complete": f"{uri}?code={row.user_code}",
            "expires_in": int(CODE_LIFETIME.total_seconds()),
            "interval": row.interval,
        }
    )


@extend_schema(
    operation_id="pollDeviceLogin",
    summary="Poll for the token of a browser login",
    description="400 with the RFC 8628 codes `authorization_pending`, `slow_down` (wait "
    "`details.interval` seconds), `access_denied`, `expired_token`, `invalid_grant`.",
    tags=["account"],
    auth=[],
    request=DeviceTokenRequest,
    examples=[examples.DEVICE_TOKEN],
    responses=inline_serializer(
        "DeviceToken",
        {
            "access_token": Text(),
            "token_type": Text(),
            "scope": Text(),
            "expires_at": serializers.DateTimeField(allow_null=True),
        },
    ),
)
@api_view(["POST"])
@authentication_classes([])
@permission_classes([AllowAny])
@throttle_classes([])
def device_token(request: Request) -> Response:
    """Not throttled per address: `slow_down` is the throttle, per device code."""
    data = DeviceTokenRequest(data=request.data)
    if not data.is_valid():
        raise ApiError(400, "bad_request", "Invalid request.", data.errors)
    try:
        token, secret = do_poll_device(data.validated_data["device_code"])
    except DeviceFlowError as exc:
        details = {"interval": exc.interval} if exc.interval else None
        raise ApiError(400, exc.code, exc.message, details) from None
    return Response(
        {
            "access_token": secret,
            "token_type": "Bearer",
            "scope": token.scope,
            "expires_at": token.expires_at,
        }
    )
