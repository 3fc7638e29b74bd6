"""Joining memhub (docs/design.md §26): staff create projects and invite people; the invitee
makes an account and connects an agent, approving its browser login (RFC 8628)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.mail import send_mail
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memapp.stores.device_auth import (
    DeviceFlowError,
    do_approve_device,
    do_deny_device,
    normalize_user_code,
    pending_authorization,
)
from memapp.stores.invitations import (
    InvitationRefused,
    do_accept_invitation,
    do_create_invitation,
    do_revoke_invitation,
    pending_invitations,
    usable_invitation,
)
from memapp.stores.models import Invitation, Project
from memapp.stores.tokens import last_call
from memapp.web.forms import AcceptForm, DeviceCodeForm, InvitationForm, ProjectForm

logger = logging.getLogger(__name__)


def _staff_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise Http404("No such page.")


def site_url(request: HttpRequest) -> str:
    return f"{request.scheme}://{request.get_host()}"


def _mail_invitation(request: HttpRequest, invitation: Invitation, link: str) -> None:
    projects = ", ".join(str(p) for p in invitation.projects.all()) or "memhub"
    inviter = request.user.get_full_name() or request.user.get_username()
    send_mail(
        subject=f"{inviter} invites you to {projects} on memhub",
        message=(
            f"{inviter} invites you to join {projects} on memhub, where your team's coding "
            f"agents share what they learn.\n\nChoose a name and password here (the link works "
            f"once, until {invitation.expires_at:%Y-%m-%d}):\n\n{link}\n"
        ),
        from_email=None,
        recipient_list=[invitation.email],
    )


def _mail_and_say(request: HttpRequest, invitation: Invitation, link: str) -> None:
    """Mail the link and say whether it went. A mail server that refuses, fails or times out
    is a warning beside the link, which the page shows once: an error page would lose it."""
    try:
        _mail_invitation(request, invitation, link)
    except OSError as exc:  # smtplib's errors, a refused connection and a timeout alike
        logger.warning("Mailing the invitation to %s failed: %r", invitation.email, exc)
        messages.warning(
            request,
            f"The mail to {invitation.email} could not be sent ({exc or type(exc).__name__}): "
            "send them the link below.",
        )
    else:
        if settings.EMAIL_HOST:
            messages.success(request, f"Invitation mailed to {invitation.email}.")
        else:  # the console backend: the mail went to the server's log alone
            messages.warning(
                request,
                f"No mail server is set (MEMHUB_EMAIL_HOST), so nothing was mailed to "
                f"{invitation.email}: send them the link below.",
            )


@login_required
def people(request: HttpRequest) -> HttpResponse:
    """Invite people and see the invitations still waiting; the new link is shown once."""
    _staff_only(request)
    form = InvitationForm(request.POST if request.method == "POST" else None)
    link = None
    if request.method == "POST" and form.is_valid():
        invitation, secret = do_create_invitation(
            request.user, form.cleaned_data["projects"], form.cleaned_data["email"]
        )
        link = request.build_absolute_uri(reverse("accept_invitation", args=[secret]))
        if invitation.email:
            _mail_and_say(request, invitation, link)
        else:
            messages.success(request, "Invitation created: send them the link below.")
        form = InvitationForm()
    context = {"form": form, "link": link, "pending": pending_invitations()}
    return render(request, "memapp/people.html", context)


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, invitation_id: int) -> HttpResponse:
    _staff_only(request)
    invitation = get_object_or_404(Invitation, pk=invitation_id)
    do_revoke_invitation(invitation)
    messages.success(request, f"Withdrew the invitation of {invitation}: its link no longer works.")
    return redirect("people")


@login_required
def project_create(request: HttpRequest) -> HttpResponse:
    _staff_only(request)
    form = ProjectForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        project = Project.objects.create(key=form.cleaned_data["key"])
        messages.success(request, f"Created the project {project}. Invite people to it.")
        return redirect("people")
    return render(request, "memapp/project_create.html", {"form": form})


def accept_invitation(request: HttpRequest, secret: str) -> HttpResponse:
    """Anyone with the link: choose a username, name and password, then connect an agent."""
    try:
        invitation = usable_invitation(secret)
    except InvitationRefused as exc:
        return render(request, "memapp/invitation_refused.html", {"reason": str(exc)}, status=410)
    if not settings.MEMHUB_PASSWORD_LOGIN:
        # Accounts come from single sign-on, which accepts the invitations for its email.
        context = {"invitation": invitation, "projects": invitation.projects.all(), "sso": True}
        return render(request, "memapp/accept_invitation.html", context)
    form = AcceptForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = do_accept_invitation(secret, data["username"], data["password1"], data["name"])
        except InvitationRefused as exc:
            return render(
                request, "memapp/invitation_refused.html", {"reason": str(exc)}, status=410
            )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(request, f"Welcome, {user.get_username()}! Now connect your agent.")
        return redirect("connect")
    context = {"form": form, "invitation": invitation, "projects": invitation.projects.all()}
    return render(request, "memapp/accept_invitation.html", context)


def connect_context(request: HttpRequest) -> dict:
    """The commands that connect an agent to this site, and whether one has called in."""
    site = site_url(request)
    index = f"{site}{reverse('client_index')}"
    return {
        "site": site,
        "install_command": settings.MEMHUB_CLIENT_INSTALL
        or f"pipx install --index-url {index} memhub-agent",
        "connected": last_call(request.user),
    }


@login_required
def connect(request: HttpRequest) -> HttpResponse:
    return render(request, "memapp/connect.html", connect_context(request))


@login_required
def device(request: HttpRequest) -> HttpResponse:
    """Approve or deny the device `memhub-agent login` named, by the code it shows."""
    code = normalize_user_code(request.POST.get("code") or request.GET.get("code") or "")
    if not code:
        return render(request, "memapp/device.html", {"form": DeviceCodeForm()})
    try:
        if request.method != "POST" or request.POST.get("decision") not in ("approve", "deny"):
            pending = pending_authorization(code)
            return render(request, "memapp/device.html", {"pending": pending, "code": code})
        if request.POST["decision"] == "approve":
            row = do_approve_device(code, request.user)
            messages.success(
                request,
                f"Approved {row.device_name!r}: memhub-agent is logged in as "
                f"{request.user.get_username()}.",
            )
        else:
            row = do_deny_device(code, request.user)
            messages.success(request, f"Denied {row.device_name!r}: it gets no token.")
    except DeviceFlowError as exc:
        form = DeviceCodeForm(initial={"code": code})
        return render(
            request, "memapp/device.html", {"form": form, "refusal": exc.message}, status=400
        )
    return redirect("connect")
