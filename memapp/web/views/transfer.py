"""Many memories at once: bulk forget, share and export from the store page, and a store as a
zip out and in."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from memapp.stores.access import get_store_for_user
from memapp.stores.actions import (
    FileRejected,
    do_forget_memories,
    do_import_files,
    do_share_memories,
)
from memapp.stores.models import Store
from memapp.stores.transfer import MAX_UPLOAD_BYTES, ImportRefused, export_zip, read_import
from memapp.web.share_preview import confirm_share
from memapp.web.undo import trash_link


class ImportForm(forms.Form):
    archive = forms.FileField(label="Zip file")
    replace = forms.BooleanField(
        label="Also replace memories that differ (their current text stays in their history)",
        required=False,
    )
    skip_failing = forms.BooleanField(
        label="Import what passes the checks and skip the rest", required=False
    )
    allow_user = forms.BooleanField(
        label="Into a team store, also import user memories (they are about a person)",
        required=False,
    )

    def clean_archive(self):
        archive = self.cleaned_data["archive"]
        if archive.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                f"The file is {archive.size:,} bytes; at most {MAX_UPLOAD_BYTES:,} are accepted."
            )
        return archive


def _zip_response(store: Store, paths: list[str] | None) -> FileResponse:
    name = slugify(f"{store.project or 'agent'} {store.label}") or "memory"
    return FileResponse(export_zip(store, paths), as_attachment=True, filename=f"{name}.zip")


@login_required
def store_export(request: HttpRequest, store_id: int) -> FileResponse:
    return _zip_response(get_store_for_user(request.user, store_id), None)


@login_required
def store_import(request: HttpRequest, store_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    form = ImportForm(request.POST or None, request.FILES or None)
    context = {"store": store, "form": form, "skipped": [], "max_upload": MAX_UPLOAD_BYTES}
    if request.method == "POST" and form.is_valid():
        try:
            plan = read_import(
                store, form.cleaned_data["archive"], allow_user=form.cleaned_data["allow_user"]
            )
        except ImportRefused as exc:
            form.add_error("archive", str(exc))
            return render(request, "memapp/import.html", context, status=400)
        if plan.skipped and not form.cleaned_data["skip_failing"]:
            context.update(skipped=plan.skipped, passed=len(plan.files))
            return render(request, "memapp/import.html", context, status=400)
        try:
            result = do_import_files(
                store,
                request.user,
                plan.files,
                plan.index,
                replace=form.cleaned_data["replace"],
                allow_user=form.cleaned_data["allow_user"],
            )
        except FileRejected as exc:
            form.add_error(None, f"Nothing was imported: {exc}")
            return render(request, "memapp/import.html", context, status=400)
        messages.success(request, _import_summary(result, plan.skipped))
        return redirect("store", store_id=store.pk)
    return render(request, "memapp/import.html", context)


def _import_summary(result: dict, skipped: list) -> str:
    parts = [
        f"Imported {len(result['written'])} memor{'y' if len(result['written']) == 1 else 'ies'}"
    ]
    if result["unchanged"]:
        parts.append(f"{len(result['unchanged'])} already the same")
    if result["kept"]:
        differ = ", ".join(result["kept"][:5])
        parts.append(f"{len(result['kept'])} kept as they were (they differ: {differ})")
    if skipped:
        parts.append(f"{len(skipped)} skipped: {', '.join(name for name, _ in skipped[:5])}")
    return "; ".join(parts) + "."


@login_required
@require_POST
def store_bulk(request: HttpRequest, store_id: int) -> HttpResponse:
    store = get_store_for_user(request.user, store_id)
    paths = sorted(set(request.POST.getlist("paths")))
    known = set(store.files.filter(path__in=paths).values_list("path", flat=True))
    paths = [path for path in paths if path in known]
    action = request.POST.get("action", "")
    if not paths:
        messages.error(request, "Tick the memories first.")
        return redirect("store", store_id=store.pk)
    if action == "export":
        return _zip_response(store, paths)
    if action == "share":
        allow_user = request.POST.get("allow_user") == "yes"
        if request.POST.get("confirm") != "yes":
            return confirm_share(
                request, store, paths, allow_user, cancel=reverse("store", args=[store.pk])
            )
        try:
            shared = do_share_memories(store, request.user, paths, allow_user=allow_user)
        except FileRejected as exc:
            messages.error(request, f"Nothing was shared: {exc}")
        else:
            messages.success(
                request, f"Shared {len(shared)} with the team: {', '.join(shared.values())}."
            )
        return redirect("store", store_id=store.pk)
    if action == "forget":
        if request.POST.get("confirm") != "yes":
            context = {
                "store": store,
                "files": store.files.filter(path__in=paths).order_by("path"),
                "trash_days": settings.MEMHUB_TRASH_DAYS,
            }
            return render(request, "memapp/forget_many.html", context)
        gone = do_forget_memories(store, request.user, paths)
        messages.success(
            request,
            format_html(
                "Forgot {} memor{}. They wait in the trash for {} days: {}.",
                len(gone),
                "y" if len(gone) == 1 else "ies",
                settings.MEMHUB_TRASH_DAYS,
                trash_link(store),
            ),
        )
        return redirect("store", store_id=store.pk)
    messages.error(request, "Choose what to do with the ticked memories.")
    return redirect("store", store_id=store.pk)
