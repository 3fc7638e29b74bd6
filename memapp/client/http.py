"""A small JSON client for memhub's agent API (the bytes on the wire: `transport`).

Transient failures (connection errors, timeouts, 5xx, 429) are retried with exponential
backoff as docs/design.md §10 asks of a sync client: 500 ms doubling to a cap of 32 s, ±25 %
jitter, a bounded number of attempts, and never past the time a request is allowed in all.
Everything else is raised at once as `ApiError` carrying the API's error shape (`{"error":
{"code", "message", "details"}}`). An answer that is not memhub's (an HTML page, a proxy's
error, another service's JSON) is `NotMemhub`, said in one sentence; so is a field missing from
an answer (each JSON object is a `Reply`). Redirects are not followed, so the token is never
sent to a host it was not meant for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from memapp.client.transport import Answer, send
from memapp.memdir.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = [
    "DEFAULT_BACKOFF",
    "NO_RETRY",
    "ApiError",
    "Backoff",
    "BehindProxy",
    "Client",
    "NotMemhub",
    "Reply",
    "TimedOut",
    "Unreachable",
]

USER_AGENT = "memhub-agent/0.1"


class ApiError(Exception):
    """The server answered with an error. `status` is the HTTP status; `code`, `message` and
    `details` come from the API's error body (`code` is `http_<status>` when there was none)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{message} [{code}, HTTP {status}]")
        self.status = status
        self.code = code
        self.message = message
        self.details = details if isinstance(details, dict) else {}


class Unreachable(Exception):
    """The server could not be reached (or kept failing transiently) after every attempt, or
    the time allowed ran out."""


class TimedOut(Unreachable):
    """No answer in the time allowed (to the connection or to the request): the server may
    still be at work on it, unlike one that refused the connection."""


class NotMemhub(Unreachable):
    """Something answered, but not memhub's API: a wrong URL, a proxy's error page."""


class BehindProxy(NotMemhub):
    """A proxy in front of memhub answered for it (502, 503, 504): the URL may be right."""


def _not_memhub_json(url: str, path: str, what: str) -> NotMemhub:
    return NotMemhub(
        f"{url} does not look like a memhub server: {path} answered {what} (check the URL)"
    )


class Reply(dict):
    """A JSON object of a server's 2xx answer, which knows the URL and the path it came from.
    A field it lacks (`reply[key]`), or holds as another type (`need`), is not memhub's
    answer: `NotMemhub`, naming the server and the field, where a proxy's or another service's
    `{}` was a KeyError's traceback in whichever command read it."""

    __slots__ = ("path", "url")

    def __init__(self, pairs: Iterable[tuple[str, Any]], url: str, path: str) -> None:
        super().__init__(pairs)
        self.url, self.path = url, path

    def __missing__(self, key: str) -> Any:
        raise _not_memhub_json(self.url, self.path, f"JSON without {key!r}")

    def need(self, key: str, kind: type[T]) -> T:
        """The field `key`, which must be a `kind` (a bool is no int here, as in JSON)."""
        value = self[key]
        if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
            return value
        said = f"{key!r} as {_json_kind(type(value))} where memhub sends {_json_kind(kind)}"
        raise _not_memhub_json(self.url, self.path, said)


def _json_kind(kind: type) -> str:
    """A JSON type in words, for a person told what the server answered."""
    for python, said in _JSON_KINDS:
        if issubclass(kind, python):
            return said
    return "null"


_JSON_KINDS = (
    (bool, "true or false"),  # before int: a bool is one
    (int, "an integer"),
    (float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "an object"),
)


class Backoff(Record):  # not a dataclass: every hook loads this, and dataclasses is slow
    """Delays between attempts: `base` doubling up to `cap`, each scaled by 1 ± `jitter`."""

    base: float = 0.5
    cap: float = 32.0
    jitter: float = 0.25
    attempts: int = 6  # requests in all, the first included

    def delays(self) -> Iterator[float]:
        """One delay per retry (so `attempts - 1` of them)."""
        import random  # a hook never retries: not loaded by it

        for retry in range(self.attempts - 1):
            delay = min(self.cap, self.base * 2**retry)
            yield delay * random.uniform(1 - self.jitter, 1 + self.jitter)


DEFAULT_BACKOFF = Backoff()
NO_RETRY = Backoff(attempts=1)


def _is_transient(status: int) -> bool:
    """Whether asking again may help: 501 and 505 say the server will never do it (a plain web
    server behind the URL answers a POST with 501), so retrying them only waited ~30 s."""
    return status == 429 or (status >= 500 and status not in (501, 505))


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        value = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _memhub_error(status: int, body: bytes) -> ApiError | None:
    """The API's error in `body`, or None when the body is not memhub's error shape."""
    try:
        error = json.loads(body.decode("utf-8"))["error"]
        return ApiError(status, str(error["code"]), str(error["message"]), error.get("details"))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


# Bad gateway, unavailable, gateway timeout: what a proxy answers for a server behind it.
_GATEWAY_STATUSES = (502, 503, 504)


def _not_memhub(
    url: str, path: str, status: int, headers: Mapping[str, str], body: bytes
) -> NotMemhub:
    if 300 <= status < 400 and headers.get("location"):
        return NotMemhub(
            f"{url} redirects {path} to {headers['location']}: log in with the server's own "
            "URL (memhub-agent never follows a redirect, so the token goes nowhere else)"
        )
    if status in _GATEWAY_STATUSES:  # the URL may be right: what is behind it did not answer
        return BehindProxy(
            f"{url}: {path} answered HTTP {status} from something in front of memhub (a proxy "
            "or a load balancer), not from memhub: memhub behind it may be down or starting"
        )
    kind = (headers.get("content-type") or "").split(";")[0].strip()
    if "html" in kind or body.lstrip()[:1] == b"<":
        what = "an HTML page"
    elif not body:
        what = "an empty answer"
    else:
        what = kind or "something that is not JSON"
    return NotMemhub(
        f"{url} does not look like a memhub server: {path} answered HTTP {status} with {what} "
        "instead of memhub's JSON (check the URL)"
    )


class Client:
    """JSON requests to one memhub server with one API token.

    `timeout` bounds each socket operation (connect, each read). `total`, when given, bounds
    one request in all, its retries and their waits included. `deadline`, a `time.monotonic()`
    value, bounds every call: no attempt starts, and no socket waits, past it. `backoff` says
    how often and how patiently transient failures are retried; `on_retry` hears, in a
    sentence, each time one is (someone may be waiting at a terminal).
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 30.0,
        total: float | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        deadline: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.total = total
        self.backoff = backoff
        self.deadline = deadline
        self.sleep = sleep
        self.on_retry = on_retry

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, body)

    def _remaining(self, deadline: float | None) -> float:
        if deadline is None:
            return self.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimedOut(f"no answer from {self.url} in the time allowed")
        return min(self.timeout, left)

    def _once(
        self,
        method: str,
        path: str,
        data: bytes | None,
        headers: Mapping[str, str] | None,
        deadline: float | None,
    ) -> Answer:
        sent = {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if data is not None:
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        return send(method, self.url + path, sent, data, self._remaining(deadline))

    def _decoded(self, path: str, answer: Answer) -> Reply | None:
        """A 2xx answer's JSON object, as a `Reply` (None for a 204, which has no body);
        `NotMemhub` for anything else: memhub answers every request with an object."""
        if answer.status == 204:
            return None
        kind = answer.headers.get("content-type") or ""
        try:
            if "json" not in kind:
                raise ValueError(kind)
            text = answer.body.decode("utf-8")
            decoded = json.loads(text, object_pairs_hook=lambda pairs: Reply(pairs, self.url, path))
        except (ValueError, UnicodeDecodeError):
            raise _not_memhub(self.url, path, answer.status, answer.headers, answer.body) from None
        if not isinstance(decoded, Reply):
            said = f"JSON that is {_json_kind(type(decoded))}, not an object"
            raise _not_memhub_json(self.url, path, said)
        return decoded

    def _refusal(self, path: str, answer: Answer) -> Exception:
        """What an answer other than 2xx says: the API's error, else why it is not memhub's."""
        error = _memhub_error(answer.status, answer.body)
        if error is None and answer.status != 304:
            return _not_memhub(self.url, path, answer.status, answer.headers, answer.body)
        return error or ApiError(answer.status, "not_modified", "Not modified.")

    def _deadline(self) -> float | None:
        ends = [] if self.total is None else [time.monotonic() + self.total]
        if self.deadline is not None:
            ends.append(self.deadline)
        return min(ends, default=None)

    def request(
        self, method: str, path: str, body: Any = None, *, headers: Mapping[str, str] | None = None
    ) -> Any:
        """Send one request (retrying transient failures) and return the answer's JSON object
        as a `Reply` (None for a 204). Raises `ApiError` for an error answer (a 304 included, as
        status 304), `NotMemhub` for an answer that is not memhub's, and `Unreachable` when
        the server cannot be reached in the attempts and time allowed (a transient *answer*
        that persists, such as a 503, is raised as its `ApiError`). `headers` are added to
        every attempt (e.g. `If-Match`)."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        delays = self.backoff.delays()
        deadline = self._deadline()
        attempt = 1
        while True:
            wait: float | None = None
            try:
                answer = self._once(method, path, data, headers, deadline)
            except OSError as exc:  # refused, timed out, unresolved, cut short
                reason = getattr(exc, "reason", exc)  # urllib's URLError wraps the cause
                kind = TimedOut if isinstance(reason, TimeoutError) else Unreachable
                failure: Exception = kind(f"cannot reach {self.url}: {reason}")
            else:
                if 200 <= answer.status < 300:
                    return self._decoded(path, answer)
                failure = self._refusal(path, answer)
                if not _is_transient(answer.status):
                    raise failure
                wait = _retry_after(answer.headers)
            delay = next(delays, None)
            if delay is None:
                raise failure
            if wait is not None:
                delay = min(self.backoff.cap, max(delay, wait))
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise failure
            attempt += 1
            if self.on_retry is not None:
                self.on_retry(
                    f"{failure}; trying again in {delay:.1f} s "
                    f"(attempt {attempt} of {self.backoff.attempts})"
                )
            self.sleep(delay)
