"""The profile page where a user creates and revokes API tokens for their agents."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from memapp.stores.tokens import (
    ReinstateRefused,
    do_create_api_token,
    do_reinstate_api_token,
    do_revoke_api_token,
    reinstatable_until,
)


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    new_token = None
    if request.method == "POST":
        row, new_token = do_create_api_token(request.user, request.POST.get("name", "")[:100])
        messages.success(request, f"Created token {row.name!r}. Copy it now: it is shown once.")
    tokens = [(token, reinstatable_until(token)) for token in request.user.api_tokens.all()]
    return render(request, "memapp/tokens.html", {"tokens": tokens, "new_token": new_token})


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
def token_reinstate(request: HttpRequest, token_id: int) -> HttpResponse:
    token = _own_token(request, token_id)
    try:
        do_reinstate_api_token(token)
    except ReinstateRefused as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Reinstated token {token.name!r}: it works again.")
    return redirect("tokens")
