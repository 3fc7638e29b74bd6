"""Template tags that put consolidation where a person already looks: the store page's
consolidation card and the Proposals page's list of runs."""

from django import template
from django.db.models import Q

from memapp.lifecycle.models import ConsolidationRun
from memapp.lifecycle.status import consolidation_status
from memapp.stores.models import Store

register = template.Library()

RECENT = 20


@register.inclusion_tag("lifecycle/partials/consolidation_panel.html", takes_context=True)
def consolidation_panel(context, store) -> dict:
    request = context["request"]
    return {
        "status": consolidation_status(store, request.user),
        "request": request,
        "csrf_token": context.get("csrf_token"),
    }


@register.inclusion_tag("lifecycle/partials/consolidation_runs.html", takes_context=True)
def consolidation_runs(context) -> dict:
    """The runs of the stores whose proposals the person reviews, newest first."""
    user = context["request"].user
    runs = ConsolidationRun.objects.filter(
        Q(owner=user) | Q(requested_by=user), store__in=Store.objects.visible_to(user).values("pk")
    )
    runs = runs.select_related("store__project").prefetch_related("proposals")
    return {"runs": runs[:RECENT]}
