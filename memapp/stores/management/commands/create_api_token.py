"""Create an API token for a user; the token is printed once, alone on the last line."""

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from memapp.stores.management.base import OneShotCommand
from memapp.stores.tokens import do_create_api_token


class Command(OneShotCommand):
    help = "Create an API token for USERNAME and print it (shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="A label to recognise the token by.")

    def handle(self, *args, username, name, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        row, token = do_create_api_token(user, name)
        self.stderr.write(
            f"Created token {row.name!r} for {username}; store it now, it is not shown again."
        )
        self.stdout.write(token)
