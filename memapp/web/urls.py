from django.contrib.auth import views as auth_views
from django.urls import path

from memapp.web.views import (
    dashboard,
    event_log,
    home,
    memories,
    settings_page,
    snapshots,
    stores,
    team_sync,
    tokens,
)

urlpatterns = [
    path("", home.home, name="home"),
    path("rescan/", home.rescan, name="rescan"),
    path("search/", stores.search, name="search"),
    path("stores/<int:store_id>/", stores.store_detail, name="store"),
    path("stores/<int:store_id>/rescan/", stores.store_rescan, name="store_rescan"),
    path("stores/<int:store_id>/health/", stores.store_health, name="store_health"),
    path("stores/<int:store_id>/health/rebuild-index/", stores.rebuild_index, name="rebuild_index"),
    path("stores/<int:store_id>/new/", memories.memory_create, name="memory_create"),
    path("stores/<int:store_id>/lint/", memories.memory_lint, name="memory_lint"),
    path("stores/<int:store_id>/preview/", memories.memory_preview, name="memory_preview"),
    path("stores/<int:store_id>/m/<path:path>/edit/", memories.memory_edit, name="memory_edit"),
    path(
        "stores/<int:store_id>/m/<path:path>/forget/", memories.memory_forget, name="memory_forget"
    ),
    path("stores/<int:store_id>/m/<path:path>", memories.memory_detail, name="memory"),
    path("profile/tokens/", tokens.token_list, name="tokens"),
    path("profile/tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("events/", event_log.event_list, name="events"),
    path("settings/", settings_page.settings_page, name="settings"),
    path("settings/flags/<str:name>/", settings_page.flag_detail, name="flag"),
    path("settings/flags/<str:name>/clear/", settings_page.flag_clear, name="flag_clear"),
    path("sync/", team_sync.sync_status, name="sync"),
    path("sync/now/", team_sync.sync_now, name="sync_now"),
    path("sync/conflicts/<int:conflict_id>/", team_sync.conflict_detail, name="sync_conflict"),
    path("snapshots/", snapshots.snapshot_list, name="snapshot_list"),
    path("snapshots/checkouts/", snapshots.checkout_register, name="checkout_register"),
    path(
        "snapshots/checkouts/<int:checkout_id>/rescan/",
        snapshots.checkout_rescan,
        name="checkout_rescan",
    ),
    path(
        "snapshots/checkouts/<int:checkout_id>/remove/",
        snapshots.checkout_remove,
        name="checkout_remove",
    ),
    path(
        "snapshots/<int:checkout_id>/<str:agent_type>/<str:scope>/",
        snapshots.snapshot_review,
        name="snapshot_review",
    ),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
