"""`memhub-agent login`, `status` and `logout`: which server this machine talks to, as whom,
for which project, and when it last synced."""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import time
import webbrowser
from datetime import datetime
from typing import Any

from memapp.client.commands import (
    CWD_OPTION,
    EXIT_AUTH,
    JSON_OPTION,
    LOGIN_ENVIRONMENT,
    PROG,
    PROJECT_ENVIRONMENT,
    TIMEOUT_OPTION,
    CommandError,
    add_command,
    connect,
    current_project,
    not_logged_in,
    print_json,
)
from memapp.client.config import (
    Config,
    config_dir,
    forget_config,
    load_config,
    normalize_url,
    save_config,
)
from memapp.client.http import ApiError, Client, Unreachable

__all__ = ["add_account_commands"]


def _read_token(value: str) -> str:
    if value == "-":
        return sys.stdin.readline().strip()
    return value.strip()


def _browser_available() -> bool:
    """A graphical browser can open here; a text one would take over the terminal we print to."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _device_login(url: str, args: argparse.Namespace) -> str:
    """A token through the browser (RFC 8628): show a code, wait while the person approves it
    in memhub, polling no faster than the server asks."""
    client = Client(url, "", timeout=args.timeout, total=args.timeout)
    start = client.post("/api/v1/device/code", {"client_name": args.name})
    print(f"To log in, open {start['verification_uri']} and enter the code {start['user_code']}")
    print(f"  (or open {start['verification_uri_complete']})", flush=True)
    if not args.no_browser and _browser_available():
        with contextlib.suppress(webbrowser.Error):
            webbrowser.open(start["verification_uri_complete"])
    interval = float(start["interval"])
    ends = time.monotonic() + float(start["expires_in"])
    while time.monotonic() < ends:
        time.sleep(interval)
        try:
            answer = client.post("/api/v1/device/token", {"device_code": start["device_code"]})
        except ApiError as exc:
            if exc.code == "authorization_pending":
                continue
            if exc.code == "slow_down":
                interval = float((exc.details or {}).get("interval") or interval + 5)
                continue
            raise CommandError(f"{url} refused the login: {exc.message}", EXIT_AUTH) from None
        return str(answer["access_token"])
    raise CommandError("the code expired before it was approved: run login again", EXIT_AUTH)


def cmd_login(args: argparse.Namespace) -> int:
    try:
        url = normalize_url(args.url)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    token = _device_login(url, args) if args.token is None else _read_token(args.token)
    if not token:
        raise CommandError("no token given")
    config = Config(url, token)
    try:
        answer = connect(config, timeout=args.timeout).get("/api/v1/stores/")
    except ApiError as exc:
        if exc.status == 401:
            raise CommandError(f"{url} refused the token: {exc.message}", EXIT_AUTH) from None
        raise
    stores = answer.need("stores", list)  # another JSON API at that URL: its token is not ours
    path = save_config(config)
    print(f"logged in to {url} ({len(stores)} stores visible); saved to {path}")
    return 0


def _ago(seconds: float) -> str:
    minutes = int(seconds // 60)
    if minutes < 1:
        return "just now"
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} hours ago"
    return f"{hours // 24} days ago"


def _status(args: argparse.Namespace) -> dict[str, Any]:
    from memapp.client.sync import scan_local
    from memapp.client.sync_state import state_path

    project = current_project(args.cwd)
    local, _ = scan_local(project.memory_dir)
    status: dict[str, Any] = {
        "project": project.ref,
        "project_dirname": project.dirname,
        "memory_dir": str(project.memory_dir),
        "local_files": len(local),
    }
    config = load_config()
    if config is None:
        raise CommandError(not_logged_in(), EXIT_AUTH)
    from_environment = bool(os.environ.get("MEMHUB_URL") or os.environ.get("MEMHUB_TOKEN"))
    status.update(server=config.url, login_from="environment" if from_environment else "file")
    client = connect(config, timeout=args.timeout)
    me = client.get("/api/v1/me")
    status.update(user=me["username"], token=me.need("token", dict), server_version=me["version"])
    try:
        store = client.post(
            "/api/v1/stores/resolve", {**project.fields(), "scope": "private", "create": False}
        )
    except ApiError as exc:
        if exc.status != 404:
            raise
        store = None
    status["store"] = (
        None if store is None else {"id": store.need("id", int), "files": store["file_count"]}
    )
    status["last_sync"] = None
    if store is not None:
        state = state_path(config_dir() / "sync", config.url, store["id"], project.memory_dir)
        if state.exists():
            status["last_sync"] = datetime.fromtimestamp(state.stat().st_mtime).astimezone()
    return status


def cmd_status(args: argparse.Namespace) -> int:
    status = _status(args)
    if args.json:
        print_json(status)
        return 0
    token = status["token"]
    store = status["store"]
    last = status["last_sync"]
    lines = [
        ("server", f"{status['server']} (memhub {status['server_version']})"),
        ("user", f"{status['user']} (token {token['name']!r}, {token['prefix']}…)"),
        ("project", f"{status['project']} ({status['project_dirname']})"),
        ("memory dir", f"{status['memory_dir']} ({status['local_files']} files)"),
        (
            "store",
            f"private store {store['id']} ({store['files']} files)"
            if store
            else f"none on the server yet: `{PROG} sync` creates it",
        ),
        (
            "last sync",
            f"{last:%Y-%m-%d %H:%M:%S} ({_ago(time.time() - last.timestamp())})"
            if last
            else "never from this machine",
        ),
    ]
    for label, value in lines:
        print(f"{label + ':':<12} {value}")
    if status["login_from"] == "environment":
        print("(login from MEMHUB_URL / MEMHUB_TOKEN)")
    return 0


def cmd_logout(args: argparse.Namespace) -> int:
    config = load_config()
    if config is None:
        print("not logged in")
        return 0
    revoked = False
    try:
        connect(config, timeout=args.timeout).request("DELETE", "/api/v1/token")
        revoked = True
    except ApiError as exc:
        revoked = exc.status == 401  # already revoked
        problem = exc.message
    except Unreachable as exc:
        problem = str(exc)
    forgot = forget_config()
    print(f"logged out of {config.url}" if forgot else f"no stored login for {config.url}")
    if revoked:
        print("the token was revoked on the server")
    else:
        print(
            f"{PROG}: the token was NOT revoked ({problem}); revoke it on the API tokens page",
            file=sys.stderr,
        )
    if os.environ.get("MEMHUB_TOKEN"):
        print(f"{PROG}: MEMHUB_TOKEN is set in this environment: unset it too", file=sys.stderr)
    return 0


def add_account_commands(commands: argparse._SubParsersAction) -> None:
    login = add_command(
        commands,
        "login",
        "store the server URL and an API token",
        description="Log in to a memhub server and keep its URL and an API token for the other "
        "commands (in the config dir, readable by you only). Without --token it shows a code "
        "to approve in memhub in your browser (RFC 8628 device login); scripts pass a token "
        "from the server's API tokens page on stdin with `--token -`.",
        examples=["login https://memhub.example.com", "login https://memhub.example.com --token -"],
        parents=[TIMEOUT_OPTION],
    )
    login.add_argument("url", metavar="URL", help="the memhub server, e.g. https://memhub.example")
    login.add_argument(
        "--no-browser",
        action="store_true",
        help="never open a browser: only print the link and the code",
    )
    login.add_argument(
        "--name",
        default=platform.node() or "device",
        help="how the device is named in memhub (default: this machine's host name)",
    )
    login.add_argument(
        "--token", help="an API token (mh_…); `-` reads it from stdin; omitted: log in in a browser"
    )
    login.set_defaults(func=cmd_login)

    status = add_command(
        commands,
        "status",
        "which server, user, project and store; when this machine last synced",
        description="Show the server this machine is logged in to and its version, the user "
        "the token belongs to, the project of the current directory, its memory dir and its "
        "private store on the server, and when this machine last synced it.",
        examples=["status", "status --json", "status --cwd ~/src/widgets"],
        environment=f"{PROJECT_ENVIRONMENT}\n{LOGIN_ENVIRONMENT}",
        parents=[JSON_OPTION, TIMEOUT_OPTION, CWD_OPTION],
    )
    status.set_defaults(func=cmd_status)

    logout = add_command(
        commands,
        "logout",
        "revoke the token on the server and forget the login",
        description="Revoke the API token on the server and remove the stored login from this "
        "machine. When the server cannot be reached the login is still removed, and you are "
        "told to revoke the token on the server's API tokens page.",
        examples=["logout"],
        parents=[TIMEOUT_OPTION],
    )
    logout.set_defaults(func=cmd_logout)
