"""Session summaries (docs/design.md §14.10), the counts their triggers read, failed tool results
kept per entry, the client's autoDreamEnabled, extraction's daily-log outcome, and cancelling a
consolidation.

SQLite adds the JSON column `errors` by rebuilding `lifecycle_transcriptentry`, which drops the
triggers that keep past-context search's FTS table up to date (0002_search): they are made
again afterwards."""

import django.db.models.deletion
from django.db import migrations, models

ENTRY_TRIGGERS = [
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_insert",
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_delete",
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_update",
    """CREATE TRIGGER lifecycle_entry_fts_insert AFTER INSERT ON lifecycle_transcriptentry BEGIN
        INSERT INTO lifecycle_entry_fts(rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER lifecycle_entry_fts_delete AFTER DELETE ON lifecycle_transcriptentry BEGIN
        INSERT INTO lifecycle_entry_fts(lifecycle_entry_fts, rowid, text)
        VALUES ('delete', old.id, old.text);
    END""",
    """CREATE TRIGGER lifecycle_entry_fts_update AFTER UPDATE OF text ON lifecycle_transcriptentry
    BEGIN
        INSERT INTO lifecycle_entry_fts(lifecycle_entry_fts, rowid, text)
        VALUES ('delete', old.id, old.text);
        INSERT INTO lifecycle_entry_fts(rowid, text) VALUES (new.id, new.text);
    END""",
]


def remake_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in ENTRY_TRIGGERS:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("lifecycle", "0005_proposalchange_scope_review"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionSummary",
            fields=[
                (
                    "session",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="summary",
                        serialize=False,
                        to="lifecycle.session",
                    ),
                ),
                ("text", models.TextField(blank=True)),
                (
                    "state",
                    models.JSONField(
                        blank=True, default=dict, help_text="What the rules keep between updates."
                    ),
                ),
                (
                    "selector",
                    models.CharField(blank=True, help_text="llm or offline", max_length=16),
                ),
                (
                    "through",
                    models.PositiveIntegerField(default=0, help_text="The last entry (seq) read."),
                ),
                (
                    "tokens_at",
                    models.PositiveIntegerField(
                        default=0, help_text="Session tokens when written."
                    ),
                ),
                ("tool_calls_at", models.PositiveIntegerField(default=0)),
                ("updates", models.PositiveIntegerField(default=0)),
                (
                    "queued",
                    models.BooleanField(default=False, help_text="An update waits for the worker."),
                ),
                ("attempts", models.PositiveIntegerField(default=0)),
                ("error", models.TextField(blank=True)),
                ("updated_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.AddField(
            model_name="session",
            name="at_rest",
            field=models.BooleanField(
                default=False,
                help_text="The last assistant turn made no tool call (a natural break).",
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="auto_dream",
            field=models.BooleanField(
                blank=True,
                help_text="The person's autoDreamEnabled, as the client said it.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="tokens",
            field=models.PositiveIntegerField(
                default=0, help_text="The main conversation's size, estimated (characters / 4)."
            ),
        ),
        migrations.AddField(
            model_name="session",
            name="tool_calls",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="transcriptentry",
            name="errors",
            field=models.JSONField(
                blank=True, default=list, help_text="Failed tool results, one line each."
            ),
        ),
        migrations.RunPython(remake_triggers, remake_triggers),
        migrations.AlterField(
            model_name="extractionrun",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("proposed", "proposed changes"),
                    ("logged", "appended to the daily log"),
                    ("nothing", "nothing worth keeping"),
                    ("skipped", "skipped by a gate"),
                    ("failed", "Failed"),
                ],
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="consolidationrun",
            name="cancel_requested",
            field=models.BooleanField(
                default=False,
                help_text="Someone cancelled it while it ran: it stops at the next step.",
            ),
        ),
        migrations.AlterField(
            model_name="consolidationrun",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("proposed", "proposed changes"),
                    ("nothing", "nothing to change"),
                    ("skipped", "skipped by a gate"),
                    ("cancelled", "Cancelled"),
                    ("failed", "Failed"),
                ],
                max_length=16,
            ),
        ),
    ]
