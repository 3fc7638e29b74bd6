"""Past-context search looks only at the caller's own entries first (docs/design.md §14.9): the
full-text index is asked for one person's entries, not everyone's then filtered.

SQLite: the FTS5 table gets the entry's owner as a second indexed column (`owner`), so a query
`owner : "42" AND text : (…)` is answered from the index; contentless (the text stays in
`lifecycle_transcriptentry`), kept up to date by the triggers below, which read the owner from
the entry's session. A trigger's body naming another table makes SQLite refuse to rebuild that
table ("error in trigger lifecycle_entry_fts_insert: no such table: main.lifecycle_session"),
and Django rebuilds `lifecycle_session` for most changes of its fields: a migration that makes
one puts it between this module's `drop_triggers` and `make_triggers`::

    entry_search = importlib.import_module("memapp.lifecycle.migrations.0010_entry_search_by_owner")
    operations = [
        migrations.RunPython(entry_search.drop_triggers, entry_search.make_triggers),
        migrations.AddField("session", ...),
        migrations.RunPython(entry_search.make_triggers, entry_search.drop_triggers),
    ]

(A rebuild of `lifecycle_transcriptentry` itself drops its triggers: make them again after it,
as 0006 did.)

PostgreSQL: the entry's `tsvector` is stored (a generated column, `text_search`) and indexed, so
ranking reads it instead of computing `to_tsvector` of every entry it considers, and the query
can start from the caller's sessions.
"""

from django.db import migrations

TOKENIZE = "porter unicode61 remove_diacritics 2"
OWNER = "(SELECT owner_id FROM lifecycle_session WHERE id = {}.session_id)"

DROP_TRIGGERS = [
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_insert",
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_delete",
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_update",
]
TRIGGERS = [
    f"""CREATE TRIGGER lifecycle_entry_fts_insert AFTER INSERT ON lifecycle_transcriptentry BEGIN
        INSERT INTO lifecycle_entry_fts(rowid, text, owner)
        VALUES (new.id, new.text, {OWNER.format("new")});
    END""",
    f"""CREATE TRIGGER lifecycle_entry_fts_delete AFTER DELETE ON lifecycle_transcriptentry BEGIN
        INSERT INTO lifecycle_entry_fts(lifecycle_entry_fts, rowid, text, owner)
        VALUES ('delete', old.id, old.text, {OWNER.format("old")});
    END""",
    f"""CREATE TRIGGER lifecycle_entry_fts_update AFTER UPDATE OF text ON lifecycle_transcriptentry
    BEGIN
        INSERT INTO lifecycle_entry_fts(lifecycle_entry_fts, rowid, text, owner)
        VALUES ('delete', old.id, old.text, {OWNER.format("old")});
        INSERT INTO lifecycle_entry_fts(rowid, text, owner)
        VALUES (new.id, new.text, {OWNER.format("new")});
    END""",
]
SQLITE = [
    *DROP_TRIGGERS,
    "DROP TABLE IF EXISTS lifecycle_entry_fts",
    f"""CREATE VIRTUAL TABLE lifecycle_entry_fts USING fts5(
        text, owner, content='', tokenize='{TOKENIZE}')""",
    """INSERT INTO lifecycle_entry_fts(rowid, text, owner)
        SELECT e.id, e.text, s.owner_id
        FROM lifecycle_transcriptentry e JOIN lifecycle_session s ON s.id = e.session_id""",
]
# Back to 0002's table and 0006's triggers.
SQLITE_REVERSE = [
    *DROP_TRIGGERS,
    "DROP TABLE IF EXISTS lifecycle_entry_fts",
    f"""CREATE VIRTUAL TABLE lifecycle_entry_fts USING fts5(
        text, content='lifecycle_transcriptentry', content_rowid='id', tokenize='{TOKENIZE}')""",
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
    "INSERT INTO lifecycle_entry_fts(lifecycle_entry_fts) VALUES ('rebuild')",
]
POSTGRESQL = [
    """ALTER TABLE lifecycle_transcriptentry ADD COLUMN text_search tsvector
        GENERATED ALWAYS AS (to_tsvector('english', text)) STORED""",
    "CREATE INDEX lifecycle_entry_text_search_stored ON lifecycle_transcriptentry "
    "USING GIN (text_search)",
    "DROP INDEX IF EXISTS lifecycle_entry_text_search",
]
POSTGRESQL_REVERSE = [
    """CREATE INDEX lifecycle_entry_text_search ON lifecycle_transcriptentry
        USING GIN (to_tsvector('english', text))""",
    "ALTER TABLE lifecycle_transcriptentry DROP COLUMN text_search",
]


def drop_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in DROP_TRIGGERS:
            schema_editor.execute(statement)


def make_triggers(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "sqlite":
        for statement in [*DROP_TRIGGERS, *TRIGGERS]:
            schema_editor.execute(statement)


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor) -> None:
        for statement in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("lifecycle", "0009_drop_memory_full_text_index")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRESQL}),
            _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRESQL_REVERSE}),
        ),
        migrations.RunPython(make_triggers, drop_triggers),
    ]
