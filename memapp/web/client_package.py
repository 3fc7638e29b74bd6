"""memhub-agent as the site serves it (docs/design.md §26): a package index of its own, so the
install command on Connect your agent works from a fresh `./scripts/run` with no internet.

memhub is not on PyPI. The site builds a client-only wheel, `memhub-agent`, from the code it
runs (`memapp/client` and `memapp/memdir`, the parts without Django), and a wheel of each
package the client needs, repacked from this server's own environment with the tags its
installer recorded. Both are served as a PEP 503 simple index at `/client/simple/`, so `pip`
and `pipx` install with `--index-url <site>/client/simple/`. A machine of another platform or
Python than the server's gets no wheel for a compiled dependency (PyYAML) from it and needs
PyPI as well (`--pip-args="--extra-index-url https://pypi.org/simple"`).

Wheels are built once per process, on first request, into `<data dir>/client-wheels/`.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata as metadata
import re
import threading
import tomllib
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from packaging.requirements import Requirement

import memapp

__all__ = ["CLIENT_NAME", "Wheel", "client_wheels", "normalize"]

CLIENT_NAME = "memhub-agent"
# What the client imports outside the standard library (the import contract keeps the rest out).
CLIENT_REQUIRES = ("PyYAML", "detect-secrets", "tqdm")
CLIENT_PACKAGES = ("memapp/client", "memapp/memdir")
# Files of an installed package that are the installer's, not the package's.
_INSTALLER_FILES = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}

_lock = threading.Lock()
_built: dict[Path, list[Wheel]] = {}


@dataclass(frozen=True)
class Wheel:
    """One wheel in the index: the project it belongs to and its file."""

    project: str  # normalized (PEP 503)
    path: Path

    @cached_property
    def sha256(self) -> str:
        """Hashed once per process: the wheels are built once and never change after."""
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def normalize(name: str) -> str:
    """A project name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def client_wheels(out: Path) -> list[Wheel]:
    """The client's wheel and its dependencies' wheels, built into `out` on first call."""
    with _lock:
        if out not in _built:
            out.mkdir(parents=True, exist_ok=True)
            _built[out] = [_client_wheel(out)] + [
                _repack(dist, out) for dist in _closure(CLIENT_REQUIRES)
            ]
        return _built[out]


def _pins() -> dict[str, str]:
    """memhub's own pins, so the client asks for the versions the server was tested with."""
    root = Path(memapp.__file__).resolve().parent.parent
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except OSError:
        return {}
    pins = {}
    for line in project["project"]["dependencies"]:
        req = Requirement(line)
        pins[normalize(req.name)] = str(req)
    return pins


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(path: Path, files: dict[str, bytes], dist_info: str) -> None:
    """A wheel of `files` with its RECORD, written whole or not at all."""
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    part = path.with_suffix(".part")
    with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(record) + "\n")
    part.replace(path)


def _client_wheel(out: Path) -> Wheel:
    version = metadata.version("memhub") if _installed("memhub") else "0.1.0"
    root = Path(memapp.__file__).resolve().parent.parent
    files = {"memapp/__init__.py": (root / "memapp" / "__init__.py").read_bytes()}
    for package in CLIENT_PACKAGES:
        for source in sorted((root / package).rglob("*")):
            if source.is_file() and "__pycache__" not in source.parts:
                files[source.relative_to(root).as_posix()] = source.read_bytes()
    pins = _pins()
    requires = [pins.get(normalize(name), name) for name in CLIENT_REQUIRES]
    dist_info = f"memhub_agent-{version}.dist-info"
    files[f"{dist_info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        f"Name: {CLIENT_NAME}\n"
        f"Version: {version}\n"
        "Summary: memhub-agent, the client of a memhub server, as that server serves it\n"
        "Requires-Python: >=3.11\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    ).encode()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: memhub\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{dist_info}/entry_points.txt"] = (
        b"[console_scripts]\nmemhub-agent = memapp.client.cli:main\n"
    )
    path = out / f"memhub_agent-{version}-py3-none-any.whl"
    _write_wheel(path, files, dist_info)
    return Wheel(normalize(CLIENT_NAME), path)


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _closure(names: tuple[str, ...]) -> list[metadata.Distribution]:
    """The installed distributions `names` need, theirs included (extras left out)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = normalize(todo.pop())
        if name in seen:
            continue
        dist = metadata.distribution(name)
        seen[name] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def _tag(dist: metadata.Distribution) -> str:
    """The wheel tag its installer recorded (`py3-none-any`, `cp311-cp311-manylinux_…`)."""
    tags = [
        line.split(":", 1)[1].strip()
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    if not tags:
        raise ValueError(f"{dist.metadata['Name']} was not installed from a wheel")
    parts = [sorted({tag.split("-")[i] for tag in tags}) for i in range(3)]
    return "-".join(".".join(p) for p in parts)


def _repack(dist: metadata.Distribution, out: Path) -> Wheel:
    """An installed distribution as the wheel it was installed from (its files as installed,
    compiled byte code and the installer's own files left out)."""
    name = dist.metadata["Name"]
    files: dict[str, bytes] = {}
    for entry in dist.files or []:
        where = entry.as_posix()
        if where.startswith("..") or "__pycache__" in where or where.endswith(".pyc"):
            continue
        if ".dist-info/" in where and where.rsplit("/", 1)[1] in _INSTALLER_FILES:
            continue
        files[where] = Path(str(dist.locate_file(entry))).read_bytes()
    dist_info = next(w.split("/")[0] for w in files if w.split("/")[0].endswith(".dist-info"))
    stem = re.sub(r"[-_.]+", "_", name)
    path = out / f"{stem}-{dist.version}-{_tag(dist)}.whl"
    _write_wheel(path, files, dist_info)
    return Wheel(normalize(name), path)
