"""The shared cache's table (MEMHUB_CACHE_URL=db://, the default), so `migrate` alone readies a
database; `createcachetable` is a no-op for other cache backends."""

from django.core.management import call_command
from django.db import migrations


def create_cache_table(apps, schema_editor):
    call_command("createcachetable", database=schema_editor.connection.alias, verbosity=0)


class Migration(migrations.Migration):
    dependencies = [("memapp", "0002_api_tokens")]

    operations = [migrations.RunPython(create_cache_table, migrations.RunPython.noop)]
