from django.urls import path

from snapshots import api, views

urlpatterns = [
    path("snapshots/", views.snapshot_list, name="snapshot_list"),
    path("snapshots/checkouts/", views.checkout_register, name="checkout_register"),
    path(
        "snapshots/checkouts/<int:checkout_id>/rescan/",
        views.checkout_rescan,
        name="checkout_rescan",
    ),
    path(
        "snapshots/checkouts/<int:checkout_id>/remove/",
        views.checkout_remove,
        name="checkout_remove",
    ),
    path(
        "snapshots/<int:checkout_id>/<str:agent_type>/<str:scope>/",
        views.snapshot_review,
        name="snapshot_review",
    ),
    path(
        "api/v1/projects/<path:project_key>/agents/<str:agent_type>/snapshot",
        api.agent_snapshot,
        name="api_agent_snapshot",
    ),
]
