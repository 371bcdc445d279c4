"""jongodb: an independent MongoDB-compatible server for differential and integration tests.

The binary comes from the npm package ``@jongodb/memory-server-bin-linux-x64-gnu`` (fetched
once with ``npm pack`` into the repo's git-ignored ``.cache/jongodb/``; the binary is
``package/bin/jongodb``). One server per test process, on a free 127.0.0.1 port, stopped at
exit. Talk to it with PyMongo's synchronous ``MongoClient`` (a test-only peer).

API (keep it small):

    reason = unavailable_reason()          # None, or why jongodb cannot run here
    uri = shared_uri()                     # starts the shared server on first use
    def test_x(jongodb_uri): ...           # session fixture; skips with the reason printed

    with JongodbServer() as server:        # a private server, if a test needs its own
        server.uri

Import the fixture into a test module with ``from tests.support.jongodb import jongodb_uri``.
jongodb has no ``drop`` command, no failpoints, no compression and no auth.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import ChildServer

__all__ = ["JongodbServer", "binary", "jongodb_uri", "shared_uri", "unavailable_reason"]

PACKAGE = "@jongodb/memory-server-bin-linux-x64-gnu"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "jongodb"
BINARY = CACHE / "package" / "bin" / "jongodb"
START_TIMEOUT = 30.0

_install_error: str | None = None
_shared: JongodbServer | None = None


def _install() -> str | None:
    """Fetch and extract the npm package; the error text, or None on success."""
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed, so the jongodb binary cannot be fetched"
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "pack", PACKAGE], cwd=CACHE, capture_output=True,
                              text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm pack {PACKAGE} failed: {exc}"
    tarballs = sorted(CACHE.glob("*.tgz"))
    if done.returncode != 0 or not tarballs:
        return f"npm pack {PACKAGE} failed: {done.stderr.strip()[-500:]}"
    with tarfile.open(tarballs[-1]) as archive:
        archive.extractall(CACHE, filter="data")
    BINARY.chmod(0o755)
    return None


def binary() -> Path | None:
    """The jongodb binary, installed on first use; None if it cannot be had."""
    global _install_error
    if not BINARY.exists() and _install_error is None:
        _install_error = _install()
    return BINARY if BINARY.exists() else None


def unavailable_reason() -> str | None:
    """Why jongodb cannot run here (None when it can)."""
    if os.uname().sysname != "Linux" or os.uname().machine not in ("x86_64", "AMD64"):
        return "jongodb is only packaged for linux x86_64 (glibc)"
    if binary() is None:
        return _install_error or "the jongodb binary is missing"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class JongodbServer(ChildServer):
    """One jongodb process on a free 127.0.0.1 port (a context manager)."""

    stop_grace_s = 10.0

    def __init__(self) -> None:
        super().__init__()
        self.port = 0

    def __repr__(self) -> str:
        state = "running" if self._process is not None else "stopped"
        return f"JongodbServer(port={self.port}, {state})"

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def start(self) -> None:
        path = binary()
        if path is None:
            raise RuntimeError(unavailable_reason() or "jongodb is unavailable")
        self.port = _free_port()
        self._spawn([str(path), f"--port={self.port}"], f"jongodb on port {self.port}",
                    self._accepts, START_TIMEOUT)

    def _accepts(self) -> bool:
        """The readiness probe: does jongodb accept a TCP connection?"""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False


def shared_uri() -> str:
    """The URI of this process's shared jongodb (started on first use, stopped at exit)."""
    global _shared
    if _shared is None:
        server = JongodbServer()
        server.start()
        atexit.register(server.stop)
        _shared = server
    return _shared.uri


@pytest.fixture(scope="session")
def jongodb_uri() -> Iterator[str]:
    """The shared jongodb's URI; skips (with the reason) if jongodb cannot run here."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"jongodb unavailable: {reason}")
    yield shared_uri()
