"""memhub: the Django project and core app."""
