"""Django admin: metadata only. Memory contents and private stores' details stay out (DESIGN §1)."""

from django.contrib import admin

from memapp.models import FlagValue, Project


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["key", "name", "created_at"]
    search_fields = ["key", "name"]
    filter_horizontal = ["members"]


@admin.register(FlagValue)
class FlagValueAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "value", "updated_at", "updated_by"]
    list_filter = ["name"]
