"""A GridFS stream's lifetime under timeoutMS (CSOT "GridFS API").

For the streams ``open_upload_stream`` and ``open_download_stream`` make, timeoutMS caps the
lifetime of the whole stream: created at time T, its last blocking call (a write, a read,
``close`` or ``abort``) must be done by T + timeoutMS. :func:`stream_deadline` fixes that end
when the stream is made; :func:`lifetime_budget` runs one call of the stream within what is
left of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Any

from asyncmongo.runtime.timeout import current_deadline, timeout

__all__ = ["lifetime_budget", "stream_deadline"]

#: The budget of a call made after the stream's end: short enough to fail at once with the
#: operation's own timeout error (timeout(0) would mean "no limit").
_SPENT = 1e-6


def stream_deadline(timeout_ms: int | None) -> float | None:
    """The loop.time() a stream made now must be done by (None: no limit): an enclosing
    ``asyncmongo.timeout()`` block's deadline, else now + the bucket's ``timeout_ms``."""
    block = current_deadline()
    if block is not None:
        return None if block == math.inf else block
    if not timeout_ms:
        return None
    return asyncio.get_running_loop().time() + timeout_ms / 1000


def lifetime_budget(deadline: float | None) -> contextlib.AbstractContextManager[Any]:
    """What is left of the stream's lifetime, as the timeout of one call's operations."""
    if deadline is None:
        return contextlib.nullcontext()
    left = deadline - asyncio.get_running_loop().time()
    return timeout(max(left, _SPENT))
