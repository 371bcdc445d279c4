"""Starting and stopping the helper servers the tests run as child processes (dnsmasq, jongodb).

Both follow the same life: start the process, poll a readiness probe until it answers (failing
at once, with the process's stderr if it was piped, when the process exits first), and at the
end terminate it, killing it if it does not exit within a grace period.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

__all__ = ["ChildServer", "stop_process", "wait_until_ready"]


def wait_until_ready(
    process: subprocess.Popen[bytes], name: str, probe: Callable[[], bool], timeout_s: float
) -> None:
    """Poll ``probe`` every 50 ms until it returns True; RuntimeError if ``process`` exits first
    or ``timeout_s`` passes (the caller then stops it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            stderr = process.stderr.read().decode().strip() if process.stderr else ""
            detail = f": {stderr}" if stderr else ""
            raise RuntimeError(f"{name} exited with {process.returncode}{detail}")
        if probe():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{name} did not answer within {timeout_s}s")


def stop_process(process: subprocess.Popen[bytes] | None, grace_s: float) -> None:
    """Terminate ``process`` (None: nothing to do), kill it after ``grace_s``, close its pipes."""
    if process is None:
        return
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stderr is not None:
        process.stderr.close()


class ChildServer:
    """A helper server run as a child process; a context manager. Subclasses implement
    ``start()`` by building the command line and calling ``_spawn``."""

    #: How long ``stop()`` waits after SIGTERM before it kills.
    stop_grace_s = 5.0

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        raise NotImplementedError

    def _spawn(
        self, args: list[str], name: str, probe: Callable[[], bool], timeout_s: float,
        *, stderr: int = subprocess.DEVNULL,
    ) -> None:
        """Start ``args`` and wait until ``probe`` answers; stopped again if it never does."""
        self._process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
        )
        try:
            wait_until_ready(self._process, name, probe, timeout_s)
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> None:
        process, self._process = self._process, None
        stop_process(process, grace_s=self.stop_grace_s)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
