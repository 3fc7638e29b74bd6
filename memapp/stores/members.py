"""Who belongs to a project: staff add and remove members (a member sees the project's team
store; a private store stays its owner's whatever happens to the membership)."""

from __future__ import annotations

from memapp.stores.events import record_event
from memapp.stores.models import Project


def do_add_member(project: Project, member, by) -> bool:
    """Make `member` a member of `project`; False when they already were."""
    if project.members.filter(pk=member.pk).exists():
        return False
    project.members.add(member)
    record_event("member_added", project=project, user=by, member=member.get_username())
    return True


def do_remove_member(project: Project, member, by) -> bool:
    """Take `member` out of `project` (their own stores are untouched); False when they
    were not a member."""
    if not project.members.filter(pk=member.pk).exists():
        return False
    project.members.remove(member)
    record_event("member_removed", project=project, user=by, member=member.get_username())
    return True
