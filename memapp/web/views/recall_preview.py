"""“What would my agent recall?”: recall for a query, as an agent would get it, without
counting as one (no session budget used, no event, no memory counted as recalled)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memapp.stores.models import Store
from memapp.stores.prompting import team_store_for
from memapp.stores.recall import recall_for

SCOPES = [("both", "private and team"), ("private", "private only"), ("team", "team only")]


class RecallPreviewForm(forms.Form):
    project = forms.TypedChoiceField(label="Project", coerce=int)
    query = forms.CharField(
        label="What you would ask the agent",
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    tools = forms.CharField(
        label="Tools the agent used recently",
        required=False,
        max_length=500,
        help_text="Comma-separated, e.g. Bash, Grep. Their usage notes are left out; their "
        "gotchas count more.",
    )
    scope = forms.ChoiceField(label="Memories", choices=SCOPES, initial="both")

    def __init__(self, *args, stores: list[Store], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.stores = {store.pk: store for store in stores}
        self.fields["project"].choices = [(s.pk, str(s.project)) for s in stores]

    def clean_tools(self) -> tuple[str, ...]:
        names = (name.strip() for name in self.cleaned_data["tools"].split(","))
        return tuple(name for name in names if name)[:10]


def _links(user, private: Store, memories: list[dict]) -> list[tuple[dict, str | None]]:
    """Each recalled memory with the store page path it lives at."""
    team = team_store_for(user, private.project)
    rows = []
    for memory in memories:
        store, path = private, memory["path"]
        if memory["scope"] == Store.Kind.TEAM and team is not None:
            store, path = team, path.removeprefix("team/")
        rows.append((memory, store.pk, path))
    return rows


@login_required
def recall_preview(request: HttpRequest) -> HttpResponse:
    stores = list(
        Store.objects.filter(kind=Store.Kind.PRIVATE, owner=request.user, project__isnull=False)
        .select_related("project")
        .order_by("project__key", "pk")
    )
    form = RecallPreviewForm(request.GET if "query" in request.GET else None, stores=stores)
    context = {"form": form, "stores": stores, "outcome": None}
    if form.is_valid():
        private = form.stores[form.cleaned_data["project"]]
        outcome = recall_for(
            request.user,
            private,
            form.cleaned_data["query"],
            recent_tools=form.cleaned_data["tools"],
            scope=form.cleaned_data["scope"],
            preview=True,
        )
        context.update(outcome=outcome, rows=_links(request.user, private, outcome.memories))
    return render(request, "memapp/recall_preview.html", context)
