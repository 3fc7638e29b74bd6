from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from memapp.web import sso
from memapp.web.forms import PasswordChangeForm
from memapp.web.views import (
    client_package,
    consolidation,
    dashboard,
    event_log,
    history,
    home,
    joining,
    lifecycle,
    memories,
    projects,
    recall_preview,
    settings_page,
    snapshots,
    stores,
    team_sync,
    tokens,
    transfer,
)

urlpatterns = [
    path("client/simple/", client_package.index, name="client_index"),
    path("client/simple/<str:name>/", client_package.project, name="client_project"),
    path("client/files/<str:filename>", client_package.wheel_file, name="client_wheel"),
    path("", home.home, name="home"),
    path("rescan/", home.rescan, name="rescan"),
    path("search/", stores.search, name="search"),
    path("recall/", recall_preview.recall_preview, name="recall_preview"),
    path("stores/<int:store_id>/", stores.store_detail, name="store"),
    path("stores/<int:store_id>/rescan/", stores.store_rescan, name="store_rescan"),
    path("stores/<int:store_id>/health/", stores.store_health, name="store_health"),
    path("stores/<int:store_id>/health/rebuild-index/", stores.rebuild_index, name="rebuild_index"),
    path(
        "stores/<int:store_id>/consolidate/",
        consolidation.consolidate_now,
        name="consolidate_now",
    ),
    path(
        "stores/<int:store_id>/consolidate/cancel/",
        consolidation.cancel_consolidation,
        name="consolidation_cancel",
    ),
    path(
        "stores/<int:store_id>/consolidation/",
        consolidation.consolidation_panel,
        name="consolidation_panel",
    ),
    path("stores/<int:store_id>/logs/", consolidation.daily_logs, name="daily_logs"),
    path("stores/<int:store_id>/new/", memories.memory_create, name="memory_create"),
    path("stores/<int:store_id>/lint/", memories.memory_lint, name="memory_lint"),
    path("stores/<int:store_id>/preview/", memories.memory_preview, name="memory_preview"),
    path("stores/<int:store_id>/m/<path:path>/edit/", memories.memory_edit, name="memory_edit"),
    path(
        "stores/<int:store_id>/m/<path:path>/forget/", memories.memory_forget, name="memory_forget"
    ),
    path("stores/<int:store_id>/m/<path:path>/share/", memories.memory_share, name="memory_share"),
    path(
        "stores/<int:store_id>/m/<path:path>/history/",
        history.memory_history,
        name="memory_history",
    ),
    path(
        "stores/<int:store_id>/m/<path:path>/history/<int:version_id>/",
        history.version_detail,
        name="memory_version",
    ),
    path(
        "stores/<int:store_id>/m/<path:path>/history/<int:version_id>/restore/",
        history.version_restore,
        name="memory_version_restore",
    ),
    path("stores/<int:store_id>/trash/", history.trash_list, name="trash"),
    path("trash/", history.trash_all, name="trash_all"),
    path("stores/<int:store_id>/export/", transfer.store_export, name="store_export"),
    path("stores/<int:store_id>/import/", transfer.store_import, name="store_import"),
    path("stores/<int:store_id>/bulk/", transfer.store_bulk, name="store_bulk"),
    path(
        "stores/<int:store_id>/trash/<int:item_id>/restore/",
        history.trash_restore,
        name="trash_restore",
    ),
    path("stores/<int:store_id>/m/<path:path>", memories.memory_detail, name="memory"),
    path("profile/tokens/", tokens.token_list, name="tokens"),
    path("profile/tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("profile/tokens/<int:token_id>/renew/", tokens.token_renew, name="token_renew"),
    path(
        "profile/tokens/<int:token_id>/reinstate/", tokens.token_reinstate, name="token_reinstate"
    ),
    path("dashboard/", dashboard.dashboard, name="dashboard"),
    path("events/", event_log.event_list, name="events"),
    path("settings/", settings_page.settings_page, name="settings"),
    path("settings/flags/<str:name>/", settings_page.flag_detail, name="flag"),
    path("settings/flags/<str:name>/clear/", settings_page.flag_clear, name="flag_clear"),
    path("sync/", team_sync.sync_status, name="sync"),
    path("sync/now/", team_sync.sync_now, name="sync_now"),
    path("sync/held/<int:held_id>/", team_sync.held_deletions, name="sync_held"),
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
    path("proposals/", lifecycle.proposal_list, name="proposals"),
    path("proposals/<int:proposal_id>/", lifecycle.proposal_detail, name="proposal"),
    path(
        "proposals/changes/<int:change_id>/rebase/", lifecycle.change_rebase, name="change_rebase"
    ),
    path("sessions/", lifecycle.session_list, name="sessions"),
    path("sessions/search/", lifecycle.past_context, name="past_context"),
    path("sessions/<int:session_pk>/", lifecycle.session_detail, name="session"),
    path("sessions/<int:session_pk>/forget/", lifecycle.session_forget, name="session_forget"),
    path("projects/", projects.project_list, name="projects"),
    path("projects/new/", joining.project_create, name="project_create"),
    path("people/", joining.people, name="people"),
    path(
        "people/invitations/<int:invitation_id>/revoke/",
        joining.invitation_revoke,
        name="invitation_revoke",
    ),
    path("join/<str:secret>/", joining.accept_invitation, name="accept_invitation"),
    path("connect/", joining.connect, name="connect"),
    path("device/", joining.device, name="device"),
    path("projects/<int:project_id>/members/", projects.project_members, name="project_members"),
    path("projects/<int:project_id>/identity/", projects.project_identity, name="project_identity"),
    path("projects/<int:project_id>/merge/", projects.project_merge, name="project_merge"),
    path(
        "projects/<int:project_id>/members/<int:user_id>/remove/",
        projects.member_remove,
        name="member_remove",
    ),
    path(
        "profile/password/",
        auth_views.PasswordChangeView.as_view(
            form_class=PasswordChangeForm, success_url=reverse_lazy("password_change_done")
        ),
        name="password_change",
    ),
    path(
        "profile/password/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("login/", sso.LoginView.as_view(), name="login"),
    path("sso/start/", sso.SSOStart.as_view(), name="sso_start"),
    path("sso/callback/", sso.SSOCallback.as_view(), name="sso_callback"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]
