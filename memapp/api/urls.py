from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView

from memapp.api import (
    account,
    consolidation,
    daily_logs,
    device,
    errors,
    lifecycle,
    memories,
    recall,
    snapshots,
    stores,
)
from memapp.api.docs import ApiDocsView
from memapp.api.plain_views import plain_prompt, plain_recall
from memapp.api.team_memory import team_memory

urlpatterns = [
    # First: an agent sends these on every prompt, and each pattern before them is tried.
    path("api/v1/prompt", plain_prompt, name="api_prompt"),
    path("api/v1/recall", plain_recall, name="api_recall"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api_schema"),
    path("api/docs/", ApiDocsView.as_view(url_name="api_schema"), name="api_docs"),
    path("api/v1/stores/", stores.store_list, name="api_stores"),
    path("api/v1/stores/resolve", stores.store_resolve, name="api_store_resolve"),
    path("api/v1/stores/<int:store_id>/files/", stores.file_list, name="api_files"),
    path("api/v1/stores/<int:store_id>/batch", stores.file_batch, name="api_batch"),
    path(
        "api/v1/stores/<int:store_id>/consolidate",
        consolidation.consolidate,
        name="api_consolidate",
    ),
    path("api/v1/stores/<int:store_id>/files/<path:key>", stores.file_detail, name="api_file"),
    path("api/v1/remember", memories.remember, name="api_remember"),
    path("api/v1/forget", memories.forget, name="api_forget"),
    path("api/v1/recall/surfaced", recall.recall_surfaced, name="api_recall_surfaced"),
    path("api/v1/session-start", recall.session_start, name="api_session_start"),
    path("api/v1/me", account.me, name="api_me"),
    path("api/v1/token", account.revoke_token, name="api_token"),
    path("api/v1/device/code", device.device_code, name="api_device_code"),
    path("api/v1/device/token", device.device_token, name="api_device_token"),
    path(
        "api/v1/projects/<path:project_key>/agents/<str:agent_type>/snapshot",
        snapshots.agent_snapshot,
        name="api_agent_snapshot",
    ),
    path(
        "api/v1/sessions/<str:session_id>/entries",
        lifecycle.session_entries,
        name="api_session_entries",
    ),
    path("api/v1/sessions/<str:session_id>", lifecycle.session_detail, name="api_session"),
    path("api/v1/proposals", lifecycle.proposal_list, name="api_proposals"),
    path(
        "api/v1/proposals/<int:proposal_id>/approve",
        lifecycle.proposal_approve,
        name="api_proposal_approve",
    ),
    path(
        "api/v1/proposals/<int:proposal_id>/reject",
        lifecycle.proposal_reject,
        name="api_proposal_reject",
    ),
    path("api/v1/search", lifecycle.search, name="api_search"),
    path("api/v1/logs", daily_logs.append_log, name="api_logs"),
    path("api/v1/stores/<int:store_id>/logs/", daily_logs.log_list, name="api_store_logs"),
    path(
        "api/v1/stores/<int:store_id>/logs/<str:day>", daily_logs.log_detail, name="api_store_log"
    ),
    path("api/claude_code/team_memory", team_memory, name="team_memory"),
    re_path(r"^api/(?P<rest>.*)$", errors.not_found),
]
