"""WSGI entry point (gunicorn serves `memapp.wsgi:application`)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memapp.settings")
application = get_wsgi_application()
