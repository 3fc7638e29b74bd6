"""Where the agent keeps its login and its sync state.

Everything lives in `$XDG_CONFIG_HOME/memhub/` (default `~/.config/memhub/`), a directory made
0700, with every file written atomically and 0600: the login file holds an API token. The
environment variables `MEMHUB_URL` and `MEMHUB_TOKEN` override the file, each on its own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from memapp.memdir.atomic import write_atomic_bytes
from memapp.memdir.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "CONFIG_FILENAME",
    "Config",
    "config_dir",
    "forget_config",
    "load_config",
    "normalize_url",
    "private_dir",
    "read_json",
    "save_config",
    "write_private",
]

CONFIG_FILENAME = "agent.json"


class Config(Record):  # not a dataclass: every hook loads this, and dataclasses is slow
    url: str  # the server's base URL, without a trailing slash
    token: str


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/memhub`, else `~/.config/memhub` (a relative XDG value is ignored, as
    the XDG spec asks)."""
    environ = _environ(env)
    xdg = environ.get("XDG_CONFIG_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "memhub"
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".config" / "memhub"


def normalize_url(url: str) -> str:
    """The server URL without a trailing slash; raises ValueError unless it is http(s)://host."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not a server URL: {url!r} (expected http(s)://host[:port])")
    if parts.query or parts.fragment:
        raise ValueError(f"a server URL has no query or fragment: {url!r}")
    return url


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def config_problem(env: Mapping[str, str] | None = None) -> str | None:
    """Why the stored login cannot be used, when its file is there but broken (not JSON, not
    an object, a URL that is none, a directory); None when it is fine or missing. Said by the
    commands that need a login, instead of a bare "not logged in"."""
    path = config_dir(env) / CONFIG_FILENAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        return f"{path} cannot be read as memhub's login ({exc})"
    if not isinstance(data, dict):
        return f"{path} holds no login (a JSON object with url and token)"
    login = _login(data.get("url"), data.get("token"))
    return None if isinstance(login, Config) else f"{path} {login}"


def load_config(env: Mapping[str, str] | None = None) -> Config | None:
    """The login to use, or None when there is no URL or no token (not logged in)."""
    environ = _environ(env)
    stored = read_json(config_dir(env) / CONFIG_FILENAME) or {}
    url = environ.get("MEMHUB_URL") or stored.get("url")
    token = environ.get("MEMHUB_TOKEN") or stored.get("token")
    login = _login(url, token)
    return login if isinstance(login, Config) else None


def _login(url: object, token: object) -> Config | str:
    """The login `url` and `token` make, or what is wrong with them (`load_config` has none
    then, `config_problem` says why)."""
    if not isinstance(url, str) or not isinstance(token, str) or not url or not token:
        return "holds no url and token"
    try:
        return Config(normalize_url(url), token.strip())
    except ValueError as exc:
        return f"holds {exc}"


def private_dir(path: Path) -> None:
    """Create `path` and any missing parents with mode 0700 (`mkdir(parents=True)` would give
    the parents the default mode); an existing `path` is tightened to 0700."""
    missing = [path, *(parent for parent in path.parents if not parent.exists())]
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
    path.chmod(0o700)


def write_private(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace `path` with `data` atomically, the file readable by its owner only (0600 from
    the first byte written), in a 0700 directory. `durable=False` skips the fsyncs, for state
    whose loss in a power cut costs only work done again (`write_atomic_bytes`)."""
    private_dir(path.parent)
    write_atomic_bytes(path, data, mode=0o600, durable=durable)


def save_config(config: Config, env: Mapping[str, str] | None = None) -> Path:
    """Store the login in the config dir; returns the file's path."""
    path = config_dir(env) / CONFIG_FILENAME
    body = json.dumps({"url": config.url, "token": config.token}, indent=2) + "\n"
    write_private(path, body.encode())
    return path


def forget_config(env: Mapping[str, str] | None = None) -> bool:
    """Remove the stored login; returns whether there was one."""
    try:
        (config_dir(env) / CONFIG_FILENAME).unlink()
    except FileNotFoundError:
        return False
    return True
