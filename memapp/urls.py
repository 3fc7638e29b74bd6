from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from memapp.views import dashboard, event_log, home, memories, settings_page, stores, tokens

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
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("", include("snapshots.urls")),  # before the API's catch-all 404
    path("", include("memapp.api.urls")),
    path("", include("teamsync.urls")),
]
