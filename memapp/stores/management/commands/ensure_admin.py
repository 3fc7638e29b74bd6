"""Create the first admin user once, so a fresh install can be logged into at once."""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create the first superuser if none exists. Password from MEMHUB_ADMIN_PASSWORD, "
        "else generated and printed once."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username, **options):
        users = get_user_model().objects
        if users.filter(is_superuser=True).exists():
            self.stdout.write("An admin user already exists; nothing to do.")
            return
        password = os.environ.get("MEMHUB_ADMIN_PASSWORD", "")
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        users.create_superuser(username=username, email="", password=password)
        if generated:
            self.stdout.write(
                self.style.WARNING(
                    f"Created admin user {username!r} with password: {password}\n"
                    "This is shown only once; change it after logging in."
                )
            )
        else:
            self.stdout.write(
                f"Created admin user {username!r} (password from MEMHUB_ADMIN_PASSWORD)."
            )
