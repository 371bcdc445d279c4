"""A cheap first answer to "does this logger log DEBUG?", for checks made on every operation.

The logging spec's messages are all DEBUG, and the pool, the command events and server
selection ask on every operation whether their logger would log one. ``isEnabledFor`` is a
Python frame; its answer, though, is cached by the logger itself, in a dict that logging
clears in place whenever a level changes (``setLevel`` on any logger, ``logging.disable``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import cast

__all__ = ["debug_maybe"]


def debug_maybe(logger: logging.Logger) -> Callable[[], bool]:
    """A C callable (no Python frame) that returns False only when ``logger`` certainly does
    not log DEBUG: its cached ``isEnabledFor(DEBUG)`` answer is False. Anything else (True,
    nothing cached yet) returns True, and the caller asks ``isEnabledFor``, which also
    honours ``Logger.disabled``::

        if maybe() and logger.isEnabledFor(logging.DEBUG): ...

    equals ``if logger.isEnabledFor(logging.DEBUG)``. Without such a cache (another logging
    implementation) the callable always returns True.
    """
    cache = getattr(logger, "_cache", None)
    if not isinstance(cache, dict):
        return functools.partial(bool, True)
    # typed as the bool it always is: the default is True, and logging caches bools
    return cast("Callable[[], bool]", functools.partial(cache.get, logging.DEBUG, True))
