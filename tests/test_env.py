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
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "MEMHUB_DATA_DIR": str(tmp_path), "MEMHUB_DISCOVER": "perhaps"}
    result = subprocess.run(
        [sys.executable, "-c", "import memapp.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "MEMHUB_DISCOVER='perhaps' is not a boolean" in result.stderr
