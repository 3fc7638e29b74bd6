"""The profile page where a user creates, renews and revokes API tokens: their devices."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memapp.stores.models import ApiToken
from memapp.stores.tokens import (
    ReinstateRefused,
    do_create_api_token,
    do_reinstate_api_token,
    do_renew_api_token,
    do_revoke_api_token,
    reinstatable_until,
    token_lifetime,
)


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    new_token = None
    if request.method == "POST":
        scope = request.POST.get("scope", ApiToken.Scope.TEAM_WRITE)
        if scope not in ApiToken.Scope.values:
            messages.error(request, f"No such scope {scope!r}.")
            return redirect("tokens")
        name = request.POST.get("name", "")[:100]
        row, new_token = do_create_api_token(request.user, name, scope)
        messages.success(request, f"Created token {row.name!r}. Copy it now: it is shown once.")
    tokens = [(token, reinstatable_until(token)) for token in request.user.api_tokens.all()]
    context = {
        "tokens": tokens,
        "new_token": new_token,
        "scopes": ApiToken.Scope.choices,
        "default_scope": ApiToken.Scope.TEAM_WRITE,
        "lifetime": token_lifetime(),
    }
    return render(request, "memapp/tokens.html", context)


def _own_token(request: HttpRequest, token_id: int):
    token = request.user.api_tokens.filter(pk=token_id).first()
    if token is None:
        raise Http404("No such token.")
    return token


@login_required
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Asks first (GET), revokes on POST."""
    token = _own_token(request, token_id)
    if request.method != "POST":
        return render(request, "memapp/token_revoke.html", {"token": token})
    do_revoke_api_token(token)
    messages.success(
        request,
        f"Revoked token {token.name!r}: agents using it are refused from now on. You can "
        "reinstate it for 24 hours.",
    )
    return redirect("tokens")


@login_required
@require_POST
def token_renew(request: HttpRequest, token_id: int) -> HttpResponse:
    token = _own_token(request, token_id)
    if token.revoked_at is not None:
        messages.error(request, f"{token.name!r} is revoked: reinstate it first.")
        return redirect("tokens")
    do_renew_api_token(token)
    until = f"until {token.expires_at:%Y-%m-%d}" if token.expires_at else "with no end"
    messages.success(request, f"Renewed token {token.name!r}: it works {until}.")
    return redirect("tokens")


@login_required
@require_POST
def token_reinstate(request: HttpRequest, token_id: int) -> HttpResponse:
    token = _own_token(request, token_id)
    try:
        do_reinstate_api_token(token)
    except ReinstateRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Reinstated token {token.name!r}: it works again.")
    return redirect("tokens")
