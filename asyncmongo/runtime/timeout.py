"""``asyncmongo.timeout(seconds)``: a client-side operation timeout for a block of code.

The equivalent of ``pymongo.timeout()``. Inside ``with asyncmongo.timeout(2.5):`` every
operation (and every cursor iteration) must finish by the block's deadline, whatever timeoutMS
its client, database, collection or session says. Blocks nest and an inner block only ever
shortens the deadline; ``timeout(None)`` (or 0) outside any block means "no limit" for the
operations in it, and inside a block keeps the outer deadline.

The block's deadline is read once, by the API (``AsyncMongoClient._run``), and from there
travels down as an argument like any other deadline.
"""

from __future__ import annotations

import asyncio
import math
from contextvars import ContextVar, Token
from types import TracebackType

__all__ = ["current_deadline", "timeout"]

#: The innermost block's deadline (a loop.time(); math.inf: no limit); unset outside blocks.
_DEADLINE: ContextVar[float] = ContextVar("asyncmongo_timeout_deadline")


class timeout:
    """``with asyncmongo.timeout(seconds):`` bounds every operation in the block."""

    __slots__ = ("_seconds", "_token")

    def __init__(self, seconds: float | None) -> None:
        if seconds is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
                raise TypeError(f"timeout must be None or a number, not {seconds!r}")
            if seconds < 0 or math.isnan(seconds):
                raise ValueError(f"timeout cannot be negative, got {seconds}")
        self._seconds = seconds
        self._token: Token[float] | None = None

    def __enter__(self) -> timeout:
        outer = _DEADLINE.get(math.inf)
        deadline = math.inf
        if self._seconds:
            deadline = asyncio.get_running_loop().time() + self._seconds
        self._token = _DEADLINE.set(min(outer, deadline))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _DEADLINE.reset(self._token)
            self._token = None


def current_deadline() -> float | None:
    """The innermost block's deadline (math.inf: a block without limit); None outside any
    block."""
    return _DEADLINE.get(None)
