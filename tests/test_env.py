import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from memapp.env import env_bind, env_bool, env_int, env_path, env_str


def test_it_reads_booleans_in_the_usual_spellings():
    assert env_bool("X", False, env={"X": "yes"}) is True
    assert env_bool("X", True, env={"X": "0"}) is False
    assert env_bool("X", True, env={}) is True


def test_it_fails_loudly_on_a_bad_boolean():
    with pytest.raises(ImproperlyConfigured, match=r"X='maybe' is not a boolean"):
        env_bool("X", False, env={"X": "maybe"})


def test_it_fails_loudly_on_a_bad_integer_or_one_below_the_minimum():
    with pytest.raises(ImproperlyConfigured, match=r"X='ten' is not an integer"):
        env_int("X", 1, env={"X": "ten"})
    with pytest.raises(ImproperlyConfigured, match=r"X=0 must be at least 1"):
        env_int("X", 1, minimum=1, env={"X": "0"})
    assert env_int("X", 7, env={"X": " 42 "}) == 42


def test_it_requires_absolute_paths():
    with pytest.raises(ImproperlyConfigured, match="must be an absolute path"):
        env_path("D", None, env={"D": "relative/dir"})
    assert str(env_path("D", None, env={"D": "/srv/memhub"})) == "/srv/memhub"


def test_the_bind_address_defaults_to_loopback():
    assert env_bind("B", "127.0.0.1:8000", env={}) == ("127.0.0.1", 8000)
    assert env_bind("B", "127.0.0.1:8000", env={"B": "9000"}) == ("127.0.0.1", 9000)
    assert env_bind("B", "x", env={"B": "0.0.0.0:80"}) == ("0.0.0.0", 80)
    assert env_bind("B", "x", env={"B": "[::1]:8080"}) == ("[::1]", 8080)


@pytest.mark.parametrize("bad", ["localhost", "127.0.0.1:", ":80", "host:99999", "a b:1"])
def test_it_rejects_a_malformed_bind_address(bad):
    with pytest.raises(ImproperlyConfigured, match="MEMHUB_BIND"):
        env_bind("MEMHUB_BIND", "127.0.0.1:8000", env={"MEMHUB_BIND": bad})


def test_empty_strings_fall_back_to_the_default():
    assert env_str("S", "fallback", env={"S": "  "}) == "fallback"


def test_settings_module_fails_at_start_on_a_bad_value(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "MEMHUB_DATA_DIR": str(tmp_path), "MEMHUB_DISCOVER": "perhaps"}
    result = subprocess.run(
        [sys.executable, "-c", "import memapp.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "MEMHUB_DISCOVER='perhaps' is not a boolean" in result.stderr


MANAGE = Path(__file__).resolve().parent.parent / "manage.py"

# Every setting memhub reads at start (README), each with a value it cannot use and words of
# what it accepts that the one-line message must carry.
BAD_SETTINGS = [
    ("MEMHUB_DATA_DIR", "relative/dir", "absolute path"),
    ("DATABASE_URL", "notaurl", "postgres://"),
    ("DATABASE_URL", "mysql://db/memhub", "postgres://"),
    ("DATABASE_URL", "postgres://host", "names no database"),
    ("MEMHUB_BIND", "localhost", "host:port"),
    ("MEMHUB_ALLOWED_HOSTS", "memhub.example.com,https://x", "memhub.example.com"),
    ("MEMHUB_CSRF_TRUSTED_ORIGINS", "memhub.example.com", "https://host"),
    ("MEMHUB_DEBUG", "maybe", "true/false"),
    ("MEMHUB_DISCOVER", "perhaps", "true/false"),
    ("ANTHROPIC_BASE_URL", "api.example.com", "https://"),
    ("MEMHUB_RECALL_TIMEOUT", "soon", "not a number"),
    ("MEMHUB_RECALL_TIMEOUT", "0", "at least 0.1"),
    ("MEMHUB_STALE_DAYS", "a month", "not an integer"),
    ("MEMHUB_EVENT_RETENTION_DAYS", "-1", "at least 0"),
    ("MEMHUB_API_RATE", "lots", "1200/min"),
    ("MEMHUB_API_RATE", "0/min", "1200/min"),
    ("MEMHUB_CACHE_URL", "memcached://x", "db://"),
    ("MEMHUB_TASKS", "celery", "database, rq, immediate"),
    ("MEMHUB_RESCAN_SECONDS", "1", "at least 5"),
    ("MEMHUB_LOG_LEVEL", "loud", "DEBUG, INFO"),
    ("MEMHUB_LOGIN_FAILURES", "0", "at least 1"),
    ("MEMHUB_LOGIN_LOCKOUT_MINUTES", "a while", "not an integer"),
    ("MEMHUB_SECURE_COOKIES", "https", "true/false"),
    ("MEMHUB_HSTS_SECONDS", "-1", "at least 0"),
    ("MEMHUB_TRUST_PROXY", "nginx", "true/false"),
]


def manage(tmp_path: Path, *args: str, **variables: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MEMHUB_DATA_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, str(MANAGE), *args],
        env={**env, **variables},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(("name", "value", "accepted"), BAD_SETTINGS)
def test_a_bad_setting_stops_manage_py_with_one_line_naming_it(tmp_path, name, value, accepted):
    result = manage(tmp_path, "check", **{name: value})

    assert result.returncode == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"memhub: {name}")
    assert accepted in line


def test_every_command_stops_the_same_way_serve_included(tmp_path):
    for command in (["serve", "--no-background"], ["migrate"], ["create_api_token", "alice"]):
        result = manage(tmp_path, *command, MEMHUB_API_RATE="lots")
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            "memhub: MEMHUB_API_RATE='lots' is not a rate (use <count>/<period> with a period "
            "of s, min, hour or day, e.g. 1200/min)"
        ]


def test_rq_tasks_need_a_redis_url(tmp_path):
    result = manage(tmp_path, "check", MEMHUB_TASKS="rq", MEMHUB_RQ_URL="localhost:6379")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "memhub: MEMHUB_RQ_URL='localhost:6379' is not a Redis URL (redis://host:6379/0)"
    ]


def test_good_settings_pass_the_check(tmp_path):
    result = manage(
        tmp_path,
        "check",
        MEMHUB_API_RATE="10/s",
        MEMHUB_CSRF_TRUSTED_ORIGINS="https://memhub.example.com,http://10.0.0.5:8000",
        MEMHUB_ALLOWED_HOSTS="memhub.example.com,.example.org,[::1]",
        MEMHUB_LOG_LEVEL="warning",
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3",
    )
    assert result.returncode == 0, result.stderr


def test_starting_the_site_leaves_the_anthropic_sdk_numpy_and_detect_secrets_unloaded(tmp_path):
    """The SDK takes most of a second to import, NumPy and detect-secrets a tenth each; every
    command, worker and test subprocess would pay them at start, though only a model call
    needs the first, a store search the second and a secret scan the third."""
    code = (
        "from django.urls import get_resolver; get_resolver().url_patterns; import sys; "
        "print(*(m in sys.modules for m in ('anthropic', 'numpy', 'detect_secrets')))"
    )
    result = manage(tmp_path, "shell", "-v", "0", "-c", code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "False"]


def test_a_command_runs_with_what_djangos_start_made_frozen(tmp_path):
    """The garbage collector never walks the start's objects again, in the command nor at exit:
    a third of a command's start (docs/design.md §21)."""
    code = "import gc; print(gc.get_freeze_count())"
    result = manage(tmp_path, "shell", "-v", "0", "-c", code)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 50_000


@pytest.mark.parametrize("command", [["discover"], ["teamsync", "push"], ["ensure_admin"]])
def test_a_command_run_before_migrate_says_what_to_do(tmp_path, command):
    result = manage(tmp_path, *command, MEMHUB_ADMIN_PASSWORD="a password for the admin")

    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "CommandError: memhub's database is not set up yet (or is behind this version): run "
        "`python manage.py migrate` first"
    )


def test_another_database_error_is_not_taken_for_a_missing_migrate(tmp_path):
    (tmp_path / "memhub.sqlite3").mkdir()  # a directory where the database file should be
    result = manage(tmp_path, "discover")

    assert result.returncode == 1
    assert "migrate" not in result.stderr
    assert "unable to open database file" in result.stderr
