import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_ensure_admin_creates_the_first_admin_with_a_generated_password_shown_once(capsys):
    call_command("ensure_admin")
    out = capsys.readouterr().out
    assert "Created admin user 'admin' with password: " in out
    password = out.split("with password: ")[1].split()[0]
    assert get_user_model().objects.get(username="admin").check_password(password)
    call_command("ensure_admin")
    again = capsys.readouterr().out
    assert again.strip() == "An admin user already exists; nothing to do."


def test_ensure_admin_takes_the_password_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("MEMHUB_ADMIN_PASSWORD", "s3cret-from-env")
    call_command("ensure_admin")
    out = capsys.readouterr().out
    assert "s3cret-from-env" not in out
    assert get_user_model().objects.get(username="admin").check_password("s3cret-from-env")
