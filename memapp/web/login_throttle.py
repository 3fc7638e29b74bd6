"""Login throttling with django-axes (docs/design.md §25): after MEMHUB_LOGIN_FAILURES failed
logins for one username, or from one address, the login page asks for a wait it names. Attempts
are rows in the database, so every server worker and machine sharing it counts the same."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessBase
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' lockout check on every login that comes with a request (the login page, the
    admin's). Code that authenticates without one (a shell, Django's test client) is no door
    from outside, and axes would refuse it outright."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


def client_address(request: HttpRequest) -> str:
    """The address failures are counted for: the last hop of X-Forwarded-For (the one the
    proxy in front added) when MEMHUB_TRUST_PROXY says a proxy sets it, else the peer's."""
    if settings.MEMHUB_TRUST_PROXY:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1].strip()
        if forwarded:
            return forwarded
    return request.META.get("REMOTE_ADDR", "")


def lockout_parameters(request_or_attempt: HttpRequest | AccessBase, credentials=None) -> list:
    """What failures are counted for: the username and, apart, the address; a sign-in that
    names no username (single sign-on's) for its address alone. Counted for the username they
    all lack, five refused single sign-ons from anywhere locked it for everyone."""
    if isinstance(request_or_attempt, AccessBase):
        username = request_or_attempt.username
    else:
        username = get_client_username(request_or_attempt, credentials)
    return ["username", "ip_address"] if username else ["ip_address"]


def locked_out(request: HttpRequest, original_response=None, credentials=None) -> HttpResponse:
    """The login page again, status 429, with a sentence saying how long to wait and who can
    unlock sooner."""
    minutes = round(get_cool_off(request).total_seconds() / 60)
    context = {
        "form": AuthenticationForm(request),
        "locked_out_minutes": minutes,
        "next": request.POST.get("next", ""),
        "sso": bool(settings.MEMHUB_OIDC_ISSUER),
        "password_login": settings.MEMHUB_PASSWORD_LOGIN,
    }
    return render(request, "registration/login.html", context, status=429)
