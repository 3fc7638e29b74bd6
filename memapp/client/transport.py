"""One HTTP request and its whole answer, for `memapp.client.http.Client`.

A hook is a new process on every prompt, and `urllib.request`, with the `http.client`, `email`
and `ssl` it loads, was most of what a hook added to Python's own start (docs/scaling.md). So
a plain `http://` URL with no proxy to go through (a memhub on this machine or the LAN, the
common case) is sent as a small HTTP/1.1 request on a socket, one connection per request as
urllib makes. Everything else goes through `urllib.request` as before: `https://`, an
`http_proxy` in the environment (in any case, set or empty: urllib then decides, `no_proxy`
included), macOS and Windows (where urllib also reads the system's proxy settings), and a URL
out of the ordinary (user info, a non-ASCII host, a path urllib would refuse). Redirects are
never followed on either path.

Both paths answer alike: an `Answer` whatever its status, or an `OSError` (a refused or timed
out connection, a name that does not resolve, an answer cut short) carrying the same reason.
"""

from __future__ import annotations

import _socket  # not `socket`: its enums and `selectors` are milliseconds of every hook
import os
import sys
from collections.abc import Mapping

from memapp.memdir.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # loaded only when a request needs it
    import urllib.request
    from email.message import Message

__all__ = ["Answer", "BrokenAnswer", "no_redirect", "send"]

# What http.client accepts of an answer's head: longer lines or more headers are no HTTP server.
MAX_LINE = 65536
MAX_HEADERS = 100


class Answer(Record):
    status: int
    headers: dict[str, str]  # names in lower case; the first of a repeated header
    body: bytes


class BrokenAnswer(ConnectionError):
    """The answer was not HTTP, or ended before its length (on the urllib path: the
    `http.client` error, in the same words)."""


def send(
    method: str,
    url: str,
    headers: Mapping[str, str],
    data: bytes | None,
    timeout: float,
) -> Answer:
    """Send `method url` with `headers` (and `data` as its body) and read the whole answer,
    `timeout` seconds allowed for the connection and for each read."""
    plain = _plain(url)
    if plain is None:
        return _send_urllib(method, url, headers, data, timeout)
    host, port, netloc, target = plain
    return _send_plain(method, host, port, netloc, target, headers, data, timeout)


def _plain(url: str) -> tuple[str, int, str, str] | None:
    """(host, port, Host header, request target) when `url` may go over a plain socket; None
    when urllib must decide (a proxy may apply, TLS, anything unusual)."""
    if not url.startswith("http://") or sys.platform == "darwin" or os.name == "nt":
        return None
    if any(name.lower() == "http_proxy" for name in os.environ):
        return None
    netloc, slash, rest = url[len("http://") :].partition("/")
    target = slash + rest or "/"
    # Printable ASCII only, no space, and no user info, escape or fragment in the host part.
    if not all("!" <= c <= "~" for c in netloc + target) or not netloc:
        return None
    if "@" in netloc or "%" in netloc or "#" in target:
        return None
    host, port = netloc, 80
    colon, bracket = netloc.rfind(":"), netloc.rfind("]")
    if colon > bracket:
        host, digits = netloc[:colon], netloc[colon + 1 :]
        if digits:
            if not digits.isdigit() or not 0 < int(digits) < 65536:
                return None
            port = int(digits)
    if host.startswith("["):
        if not host.endswith("]"):
            return None
        host = host[1:-1]
    elif "[" in host or "]" in host:
        return None
    return (host, port, netloc, target) if host else None


def _send_plain(
    method: str,
    host: str,
    port: int,
    netloc: str,
    target: str,
    headers: Mapping[str, str],
    data: bytes | None,
    timeout: float,
) -> Answer:
    lines = [f"{method} {target} HTTP/1.1", f"Host: {netloc}", "Accept-Encoding: identity"]
    for name, value in headers.items():
        if any(c in name + value for c in "\r\n\0"):  # refused as http.client refuses it
            raise ValueError(f"Invalid header {name!r}: {value!r}")
        lines.append(f"{name}: {value}")
    if data is not None:
        lines.append(f"Content-Length: {len(data)}")
    lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    sock = _connect(host, port, timeout)
    try:
        sock.sendall(head + (data or b""))
        return _read_answer(_Reader(sock))
    finally:
        sock.close()


def _connect(host: str, port: int, timeout: float) -> _socket.socket:
    """A connection to the first of the host's addresses that accepts one, as
    `socket.create_connection` makes it (the last failure raised when none does)."""
    failure: OSError | None = None
    # The host as bytes, which getaddrinfo takes as they are: a str is encoded with the `idna`
    # codec first, whose import alone is a few milliseconds (only ASCII hosts come here).
    found = _socket.getaddrinfo(host.encode("ascii"), port, 0, _socket.SOCK_STREAM)
    for family, kind, proto, _name, address in found:
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(address)
        except OSError as exc:
            sock.close()
            failure = exc
        else:
            return sock
    raise failure or OSError("getaddrinfo returns an empty list")


class _Reader:
    """An answer read off a socket through a buffer; every `recv` waits at most the socket's
    timeout."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.start = 0  # what was read before it is consumed

    def _fill(self) -> bool:
        if self.start > 65536 and self.start * 2 > len(self.buffer):
            del self.buffer[: self.start]
            self.start = 0
        chunk = self.sock.recv(65536)
        self.buffer += chunk
        return bool(chunk)

    def _take(self, end: int) -> bytes:
        taken = bytes(self.buffer[self.start : end])
        self.start = end
        return taken

    def readline(self, limit: int) -> bytes:
        """The next line, its newline included; at most `limit` bytes of it."""
        while True:
            end = self.buffer.find(b"\n", self.start, self.start + limit)
            if end >= 0:
                return self._take(end + 1)
            if len(self.buffer) - self.start >= limit or not self._fill():
                return self._take(min(len(self.buffer), self.start + limit))

    def read(self, size: int = -1) -> bytes:
        """`size` bytes (fewer when the answer ends first); with -1, all until it ends."""
        while (size < 0 or len(self.buffer) - self.start < size) and self._fill():
            pass
        end = len(self.buffer) if size < 0 else min(len(self.buffer), self.start + size)
        return self._take(end)


def _line(stream: _Reader) -> bytes:
    line = stream.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise BrokenAnswer("got more than 65536 bytes when reading a line")
    return line


def _read_answer(stream: _Reader) -> Answer:
    while True:
        status_line = _line(stream)
        if not status_line:
            raise BrokenAnswer("Remote end closed connection without response")
        version, _, rest = status_line.decode("latin-1").rstrip("\r\n").partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/") or not code.isdigit() or not 100 <= int(code) <= 999:
            raise BrokenAnswer(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(code)
        headers = _read_headers(stream)
        if status != 100:  # as http.client: a 100 Continue is followed by the answer
            break
    if status in (204, 304) or 100 <= status < 200:
        return Answer(status, headers, b"")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return Answer(status, headers, _read_chunked(stream))
    try:
        length: int | None = int(headers.get("content-length", ""))
    except ValueError:
        length = None
    if length is None or length < 0:
        return Answer(status, headers, stream.read())
    body = stream.read(length)
    if len(body) < length:
        short = length - len(body)
        raise BrokenAnswer(f"IncompleteRead({len(body)} bytes read, {short} more expected)")
    return Answer(status, headers, body)


def _read_headers(stream: _Reader) -> dict[str, str]:
    headers: dict[str, str] = {}
    kept = ""  # the header a folded line continues, when it is the one kept
    for _ in range(MAX_HEADERS + 1):
        line = _line(stream)
        if line in (b"\r\n", b"\n", b""):
            return headers
        text = line.decode("latin-1").rstrip("\r\n")
        if text[:1] in (" ", "\t"):  # an old-style folded line continues its header
            if kept:
                headers[kept] += " " + text.strip()
            continue
        field, colon, value = text.partition(":")
        name = field.strip().lower()
        kept = name if colon and name not in headers else ""
        if kept:
            headers[name] = value.strip()
    raise BrokenAnswer(f"got more than {MAX_HEADERS} headers")


def _read_chunked(stream: _Reader) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = _line(stream).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise BrokenAnswer(f"bad chunk size: {size_line!r}") from None
        if size == 0:
            while _line(stream) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        chunk = stream.read(size)
        if len(chunk) < size:
            raise BrokenAnswer("IncompleteRead: the answer ended inside a chunk")
        parts.append(chunk)
        stream.read(2)  # the chunk's CRLF


def _send_urllib(
    method: str,
    url: str,
    headers: Mapping[str, str],
    data: bytes | None,
    timeout: float,
) -> Answer:
    import http.client
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=data, method=method)
    for name, value in headers.items():
        request.add_header(name, value)
    opener = urllib.request.build_opener(no_redirect())
    try:
        try:
            with opener.open(request, timeout=timeout) as response:
                return Answer(response.status, _lowered(response.headers), response.read())
        except urllib.error.HTTPError as exc:  # any status but 2xx, a redirect included
            return Answer(exc.code, _lowered(exc.headers), exc.read())
    except http.client.HTTPException as exc:
        raise BrokenAnswer(str(exc)) from exc


def _lowered(headers: Message) -> dict[str, str]:
    lowered: dict[str, str] = {}
    for name, value in headers.items():
        lowered.setdefault(name.lower(), value)
    return lowered


def no_redirect() -> urllib.request.HTTPRedirectHandler:
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object) -> None:
            return None  # urllib then raises HTTPError with the 3xx status

    return NoRedirect()
