"""A line a log writes keeps no secret (docs/design.md §10a), whatever part of the record
holds it: the message, its arguments, or the traceback of the exception it reports."""

from __future__ import annotations

import logging
import logging.config
from pathlib import Path

import pytest

from memapp.log_lines import FILTERS

TOKEN = "ghp_" + "Vq7Lm2Xz9Kp4Rt8Wn3Ys6Bd1Fh5Jc0Ge2TqW"
SHOWN = "[REDACTED:GitHub personal access token]"


@pytest.fixture
def written(tmp_path):
    """A logger whose lines go to a file through the filter the site's handlers have."""
    path = tmp_path / "site.log"
    handler = {"class": "logging.FileHandler", "filename": str(path), "filters": ["secrets"]}
    logging.config.dictConfig(
        {
            "version": 1,
            "disable_existing_loggers": False,
            "filters": FILTERS,
            "handlers": {"file": handler},
            "loggers": {"memhub.test": {"handlers": ["file"], "propagate": False}},
        }
    )
    yield lambda: path.read_text()
    logging.getLogger("memhub.test").handlers.clear()


def test_a_token_in_the_exception_a_line_reports_is_redacted(written):
    """Django's log of a 500 carries the traceback: an error reading a file named after a
    token names its path there."""
    try:
        Path(f"/nonexistent/{TOKEN}.md").read_text()
    except OSError:
        logging.getLogger("memhub.test").exception("Internal Server Error: %s", "/api/v1/x")
    assert "FileNotFoundError" in written()
    assert TOKEN not in written()
    assert f"/nonexistent/{SHOWN}.md" in written()


def test_a_token_in_a_lines_arguments_is_redacted(written):
    logging.getLogger("memhub.test").warning("%(path)s %(status)s", {"path": TOKEN, "status": 404})
    assert written() == f"{SHOWN} 404\n"


def test_a_line_whose_arguments_do_not_fit_fails_no_caller(written, capsys):
    """Logging reports such a line on standard error and goes on; the filter must not turn
    it into an error of whatever logged it (a request would answer 500)."""
    logger = logging.getLogger("memhub.test")
    (handler,) = (h for h in logger.handlers if isinstance(h, logging.FileHandler))
    # Given to the site's handler alone: pytest's own, on every logger, raises for such a line.
    handler.handle(logger.makeRecord(logger.name, logging.WARNING, "", 0, "%s, %s", ("1",), None))
    logger.warning("then %s", TOKEN)
    assert written() == f"then {SHOWN}\n"
    assert "not enough arguments" in capsys.readouterr().err


@pytest.mark.parametrize("debug", ["0", "1"])
def test_djangos_lines_are_written_once_and_redacted_as_the_site_logs_them(tmp_path, debug):
    """As the settings make the logging, not as a test sets it: with MEMHUB_DEBUG=1 Django's
    own console handler wrote its lines unfiltered (and each twice)."""
    from tests.test_env import manage

    said = f"import logging; logging.getLogger('django.request').warning('Not Found: /x/{TOKEN}')"
    result = manage(tmp_path, "shell", "--no-imports", "-c", said, MEMHUB_DEBUG=debug)
    assert result.returncode == 0, result.stderr
    assert TOKEN not in result.stderr
    assert result.stderr.count(f"Not Found: /x/{SHOWN}") == 1
