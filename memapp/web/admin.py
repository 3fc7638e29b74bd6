"""Django admin: metadata only. Memory contents and private stores' details stay out
(docs/design.md §1)."""

from django.contrib import admin

from memapp.stores.flags import FLAGS, clear_flag_override, set_flag
from memapp.stores.models import FlagValue, Project
from memapp.web.forms import FlagValueAdminForm


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    """A project's slug and aliases are changed on its memhub page, where they are checked,
    the old key kept as an alias and the team folder moved (docs/design.md §1)."""

    list_display = ["key", "name", "created_at"]
    search_fields = ["key", "name", "aliases__name"]
    filter_horizontal = ["members"]

    def get_readonly_fields(self, request, obj=None):
        return ["key", "repo_slug"] if obj is not None else []


@admin.register(FlagValue)
class FlagValueAdmin(admin.ModelAdmin):
    """Every change goes through `set_flag` / `clear_flag_override`: validated and audited."""

    form = FlagValueAdminForm
    list_display = ["name", "project", "value", "updated_at", "updated_by"]
    list_filter = ["name"]
    list_select_related = ["project", "updated_by"]

    def get_readonly_fields(self, request, obj=None):
        # A row is one flag in one scope; moving it elsewhere is a delete and an add.
        readonly = ["updated_at", "updated_by"]
        return readonly + ["name", "project"] if obj is not None else readonly

    def save_model(self, request, obj, form, change):
        note = form.cleaned_data.get("note", "")
        set_flag(obj.name, obj.value, project=obj.project, user=request.user, note=note)
        saved = FlagValue.objects.get(name=obj.name, project=obj.project)
        obj.pk, obj.updated_at, obj.updated_by = saved.pk, saved.updated_at, saved.updated_by

    def delete_model(self, request, obj):
        if obj.name in FLAGS:
            clear_flag_override(obj.name, obj.project, user=request.user, note="removed in admin")
        else:  # a flag memhub no longer has: nothing reads it, nothing to audit
            obj.delete()

    def delete_queryset(self, request, queryset):
        for obj in queryset.select_related("project"):
            self.delete_model(request, obj)
