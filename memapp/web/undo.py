"""The Undo a message offers right after something was forgotten (docs/design.md §23)."""

from __future__ import annotations

from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memapp.stores.models import Store, TrashItem


def undo_button(request, store: Store, item: TrashItem) -> SafeString:
    """A one-button form restoring `item` from the trash: a message is HTML the page shows as
    given (Django's message storage keeps it marked safe), and the restore is a POST."""
    url = reverse("trash_restore", kwargs={"store_id": store.pk, "item_id": item.pk})
    return format_html(
        '<form method="post" action="{}" class="inline undo">'
        '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
        '<button type="submit">Undo</button></form>',
        url,
        get_token(request),
    )


def trash_link(store: Store | None = None) -> SafeString:
    url = reverse("trash", kwargs={"store_id": store.pk}) if store else reverse("trash_all")
    return format_html('<a href="{}">Open the trash</a>', url)
