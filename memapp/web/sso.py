"""Single sign-on with OpenID Connect (docs/design.md §26), through mozilla-django-oidc: the
authorization code flow with PKCE, endpoints from the issuer's discovery document, an id token
checked for signature, issuer, audience and expiry, and a verified email from an allowed domain.
Accounts are linked by email, or made on the first sign-in; invitations waiting for that email
are accepted then."""

from __future__ import annotations

import re

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from memapp.stores.invitations import do_accept_invitations_for

_discovered: dict[str, dict] = {}


def discovery() -> dict:
    """The issuer's discovery document, read once per process; its `issuer` must be ours."""
    issuer = settings.MEMHUB_OIDC_ISSUER
    if not issuer:
        raise ImproperlyConfigured("Single sign-on is off (MEMHUB_OIDC_ISSUER is not set).")
    if issuer not in _discovered:
        response = requests.get(
            f"{issuer}/.well-known/openid-configuration", timeout=settings.OIDC_TIMEOUT
        )
        response.raise_for_status()
        document = response.json()
        if str(document.get("issuer", "")).rstrip("/") != issuer:
            raise ImproperlyConfigured(
                f"{issuer}'s discovery document names another issuer: {document.get('issuer')!r}"
            )
        _discovered[issuer] = document
    return _discovered[issuer]


def _endpoint(name: str) -> property:
    return property(lambda self: discovery()[name])


def _setting(name: str) -> property:
    return property(lambda self: getattr(settings, name))


class SSOBackend(OIDCAuthenticationBackend):
    """Endpoints and client are read when used, not when Django builds the backend (it does for
    every request with a session)."""

    OIDC_OP_TOKEN_ENDPOINT = _endpoint("token_endpoint")
    OIDC_OP_USER_ENDPOINT = _endpoint("userinfo_endpoint")
    OIDC_OP_JWKS_ENDPOINT = _endpoint("jwks_uri")
    OIDC_RP_CLIENT_ID = _setting("MEMHUB_OIDC_CLIENT_ID")
    OIDC_RP_CLIENT_SECRET = _setting("MEMHUB_OIDC_CLIENT_SECRET")
    OIDC_RP_SIGN_ALGO = "RS256"
    OIDC_RP_IDP_SIGN_KEY = None

    def __init__(self, *args, **kwargs) -> None:
        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        if not settings.MEMHUB_OIDC_ISSUER or request is None or "code" not in request.GET:
            return None
        return super().authenticate(request, **kwargs)

    def _verify_jws(self, payload, key):
        """The library checks neither audience nor issuer, and lets an expired token's error
        escape: every check here, every failure a refusal."""
        try:
            return jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=settings.MEMHUB_OIDC_CLIENT_ID,
                issuer=discovery()["issuer"],
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"the id token was refused: {exc}") from None

    def verify_claims(self, claims) -> bool:
        email = str(claims.get("email") or "")
        if not email or claims.get("email_verified") is not True:
            messages.error(self.request, "Single sign-on refused: your email is not verified.")
            return False
        domains = settings.MEMHUB_OIDC_ALLOWED_DOMAINS
        if domains and email.rsplit("@", 1)[-1].lower() not in domains:
            messages.error(
                self.request, f"Single sign-on refused: {email} is not of an allowed domain."
            )
            return False
        return True

    def _username(self, claims) -> str:
        wanted = str(claims.get("preferred_username") or claims["email"].split("@")[0])
        base = re.sub(r"[^\w.@+-]", "", wanted)[:140] or "user"
        name, n = base, 1
        while self.UserModel.objects.filter(username__iexact=name).exists():
            n += 1
            name = f"{base}{n}"
        return name

    def _staff(self, claims) -> bool | None:
        """Whether the staff group is in the claim `MEMHUB_OIDC_STAFF_CLAIM` names (a dotted
        path reaches into objects, as Keycloak's `realm_access.roles`; a list or one string);
        None when no staff group is set, so staff is then set in memhub."""
        group = settings.MEMHUB_OIDC_STAFF_GROUP
        if not group:
            return None
        value = claims
        for part in settings.MEMHUB_OIDC_STAFF_CLAIM.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, str):
            return value == group
        return isinstance(value, list) and group in value

    def create_user(self, claims):
        user = self.UserModel.objects.create_user(
            self._username(claims),
            email=claims["email"],
            first_name=str(claims.get("given_name") or "")[:150],
            last_name=str(claims.get("family_name") or "")[:150],
            is_staff=bool(self._staff(claims)),
        )
        user.set_unusable_password()
        user.save(update_fields=["password"])
        do_accept_invitations_for(user)
        return user

    def update_user(self, user, claims):
        staff = self._staff(claims)
        if staff is not None and user.is_staff != staff:
            user.is_staff = staff
            user.save(update_fields=["is_staff"])
        do_accept_invitations_for(user)
        return user


class SSOStart(OIDCAuthenticationRequestView):
    OIDC_OP_AUTH_ENDPOINT = _endpoint("authorization_endpoint")
    OIDC_RP_CLIENT_ID = _setting("MEMHUB_OIDC_CLIENT_ID")

    def __init__(self, **kwargs) -> None:
        View.__init__(self, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.MEMHUB_OIDC_ISSUER:
            raise Http404("Single sign-on is off.")
        return super().get(request)


class SSOCallback(OIDCAuthenticationCallbackView):
    """A refused sign-in lands on the login page saying why; nobody is signed in."""

    @property
    def failure_url(self) -> str:
        return settings.LOGIN_URL if settings.LOGIN_URL.startswith("/") else "/login/"

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.MEMHUB_OIDC_ISSUER:
            raise Http404("Single sign-on is off.")
        try:
            return super().get(request)
        except (SuspiciousOperation, requests.RequestException) as exc:
            messages.error(request, f"Single sign-on failed: {exc}.")
            return redirect("login")

    def login_failure(self):
        if not len(messages.get_messages(self.request)):  # len() leaves them to be shown
            messages.error(self.request, "Single sign-on failed: nobody was signed in.")
        return super().login_failure()


class LoginView(auth_views.LoginView):
    """The login page offers single sign-on when it is on, and the password form unless it
    was turned off (MEMHUB_PASSWORD_LOGIN=0)."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["sso"] = bool(settings.MEMHUB_OIDC_ISSUER)
        context["password_login"] = settings.MEMHUB_PASSWORD_LOGIN
        return context

    def post(self, request, *args, **kwargs):
        if not settings.MEMHUB_PASSWORD_LOGIN:
            raise Http404("Passwords are off: use single sign-on.")
        return super().post(request, *args, **kwargs)
