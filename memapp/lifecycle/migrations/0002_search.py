"""Full-text search over transcripts and memories (docs/design.md §14.9): SQLite FTS5 tables kept
up to date by triggers on the embedded default, a GIN index on PostgreSQL."""

from django.db import migrations

TOKENIZE = "porter unicode61 remove_diacritics 2"

SQLITE = [
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
    f"""CREATE VIRTUAL TABLE lifecycle_memory_fts USING fts5(
        name, description, body, content='memapp_memoryfile', content_rowid='id',
        tokenize='{TOKENIZE}')""",
    """CREATE TRIGGER lifecycle_memory_fts_insert AFTER INSERT ON memapp_memoryfile BEGIN
        INSERT INTO lifecycle_memory_fts(rowid, name, description, body)
        VALUES (new.id, new.name, new.description, new.body);
    END""",
    """CREATE TRIGGER lifecycle_memory_fts_delete AFTER DELETE ON memapp_memoryfile BEGIN
        INSERT INTO lifecycle_memory_fts(lifecycle_memory_fts, rowid, name, description, body)
        VALUES ('delete', old.id, old.name, old.description, old.body);
    END""",
    """CREATE TRIGGER lifecycle_memory_fts_update
    AFTER UPDATE OF name, description, body ON memapp_memoryfile BEGIN
        INSERT INTO lifecycle_memory_fts(lifecycle_memory_fts, rowid, name, description, body)
        VALUES ('delete', old.id, old.name, old.description, old.body);
        INSERT INTO lifecycle_memory_fts(rowid, name, description, body)
        VALUES (new.id, new.name, new.description, new.body);
    END""",
    "INSERT INTO lifecycle_memory_fts(lifecycle_memory_fts) VALUES ('rebuild')",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS lifecycle_memory_fts_update",
    "DROP TRIGGER IF EXISTS lifecycle_memory_fts_delete",
    "DROP TRIGGER IF EXISTS lifecycle_memory_fts_insert",
    "DROP TABLE IF EXISTS lifecycle_memory_fts",
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_update",
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_delete",
    "DROP TRIGGER IF EXISTS lifecycle_entry_fts_insert",
    "DROP TABLE IF EXISTS lifecycle_entry_fts",
]
POSTGRESQL = [
    """CREATE INDEX lifecycle_entry_text_search ON lifecycle_transcriptentry
        USING GIN (to_tsvector('english', text))""",
]
POSTGRESQL_REVERSE = ["DROP INDEX IF EXISTS lifecycle_entry_text_search"]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor) -> None:
        for statement in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("lifecycle", "0001_sessions_proposals"),
        ("memapp", "0003_cache_table"),
    ]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRESQL}),
            _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRESQL_REVERSE}),
        ),
    ]
