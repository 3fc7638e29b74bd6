"""Memories are searched from their store's ranking index now (docs/design.md §24), not from an
FTS5 table: drop the table and the triggers that kept it up to date on every mirror write.
(SQLite only; PostgreSQL never had one.)"""

from django.db import migrations

TOKENIZE = "porter unicode61 remove_diacritics 2"

DROP = [
    "DROP TRIGGER IF EXISTS lifecycle_memory_fts_update",
    "DROP TRIGGER IF EXISTS lifecycle_memory_fts_delete",
    "DROP TRIGGER IF EXISTS lifecycle_memory_fts_insert",
    "DROP TABLE IF EXISTS lifecycle_memory_fts",
]
RECREATE = [
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


def _run(statements: list[str]):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("lifecycle", "0008_proposal_kind_inbox")]

    operations = [migrations.RunPython(_run(DROP), _run(RECREATE))]
