#!/usr/bin/env python
"""Django's command-line utility for memhub."""

import gc
import os
import sys
from importlib import import_module


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memapp.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import ManagementUtility

    class Utility(ManagementUtility):
        def fetch_command(self, subcommand):
            # Django is set up by now, and what its start made lives as long as the command:
            # frozen, the cyclic garbage collector never walks it again, in a collection during
            # the command nor in the one at exit (docs/design.md §21).
            gc.freeze()
            return super().fetch_command(subcommand)

    try:
        # The settings check every variable (README) as they load.
        import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    except ImproperlyConfigured as exc:
        # One line naming the variable and what it accepts; a traceback would bury it.
        sys.exit(f"memhub: {exc}")
    Utility(sys.argv).execute()


if __name__ == "__main__":
    main()
