"""Log lines without secrets (docs/design.md §10a): a request's path and query are logged as
they came (the access log, Django's warning of each 4xx answer), and a token a person searched
for, or an agent put in a URL or a file's name, would be kept there in clear."""

from __future__ import annotations

import logging

from memapp.memdir.secret_rules import redact_text


class RedactSecrets(logging.Filter):
    """Replaces what the fast rules find in a record's message, and in the traceback it
    carries (an error's text names the file or the value it failed on), by
    ``[REDACTED:<label>]``."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit: the handler reports the line, as
            message = ""  # logging does (raised here, it would fail whatever logged it)
        redacted, hits = redact_text(message)
        if hits:
            record.msg, record.args = redacted, None
        if record.exc_info or record.exc_text:
            # As a formatter writes it, which takes `exc_text` when it is set (by this filter,
            # or by a handler before this one).
            exc_text = record.exc_text or logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact_text(exc_text)[0]
        if record.stack_info:
            record.stack_info = redact_text(record.stack_info)[0]
        return True


# For `logging.config.dictConfig`: the filter, and its name to give each handler.
FILTERS = {"secrets": {"()": "memapp.log_lines.RedactSecrets"}}
