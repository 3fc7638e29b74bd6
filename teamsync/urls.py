from django.urls import path

from teamsync import views

urlpatterns = [
    path("sync/", views.sync_status, name="sync"),
    path("sync/now/", views.sync_now, name="sync_now"),
    path("sync/conflicts/<int:conflict_id>/", views.conflict_detail, name="sync_conflict"),
]
