"""Create the first admin user once, so a fresh install can be logged into at once."""

from memapp.stores.first_admin import do_ensure_admin
from memapp.stores.management.base import OneShotCommand


class Command(OneShotCommand):
    help = (
        "Create the first superuser if none exists. Password from MEMHUB_ADMIN_PASSWORD, "
        "else generated and printed once."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username, **options):
        admin = do_ensure_admin(username)
        if not admin.created:
            self.stdout.write("An admin user already exists; nothing to do.")
        elif admin.generated_password:
            self.stdout.write(
                self.style.WARNING(
                    f"Created admin user {username!r} with password: {admin.generated_password}\n"
                    "This is shown only once; change it after logging in."
                )
            )
        else:
            self.stdout.write(
                f"Created admin user {username!r} (password from MEMHUB_ADMIN_PASSWORD)."
            )
