#!/usr/bin/env python
"""Django's command-line utility for memhub."""

import os
import sys
from importlib import import_module


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memapp.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        # The settings check every variable (README) as they load.
        import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    except ImproperlyConfigured as exc:
        # One line naming the variable and what it accepts; a traceback would bury it.
        sys.exit(f"memhub: {exc}")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
