"""`manage.py teamsync pull|push`: team sync by hand (the background process enqueues it as a
task on its own schedule; see teamsync.scheduling)."""

from __future__ import annotations

from memapp.stores.management.base import OneShotCommand
from teamsync.service import SyncReport, do_sync_team, team_remote_display


class Command(OneShotCommand):
    help = "Team sync by hand: 'pull', or 'push' (which pulls first)."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["pull", "push"])

    def handle(self, *args, action, **options):
        self.stdout.write(f"Team sync with {team_remote_display()} …")
        report = do_sync_team(push=action == "push")
        self._summary(report)
        if report.error:
            raise SystemExit(1)

    def _summary(self, report: SyncReport) -> None:
        line = (
            f"committed {report.committed}, written {report.written}, deleted {report.deleted}, "
            f"conflicts {len(report.conflicts)}, pushed {'yes' if report.pushed else 'no'} "
            f"({report.duration_ms} ms)"
        )
        self.stdout.write(line)
        if report.error:
            kind = "suppressed" if report.suppressed else "failed"
            self.stderr.write(f"sync {kind}: {report.error}")
