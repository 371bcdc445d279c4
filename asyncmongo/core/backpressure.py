"""Client backpressure spec, "Overload retry policy", as pure functions.

A server that sheds load answers with an error labelled ``SystemOverloadedError`` (and, when
the command did no work and may be sent again whatever it is, ``RetryableError``). The
executor retries such a *retryable overload error* for any command, up to
``maxAdaptiveRetries`` times, sleeping ``jitter * min(MAX_BACKOFF, base * 2**retry)`` before
each retry. Once any overload error was seen, that same maximum caps every retry of the
operation, overload or not ("Interaction with Other Retry Policies").

Randomness comes in as an argument (the jitter), so the schedule is deterministic in tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from asyncmongo.errors import MongoError, OperationFailure

__all__ = [
    "BASE_BACKOFF_MS",
    "DEFAULT_MAX_ADAPTIVE_RETRIES",
    "MAX_BACKOFF_MS",
    "RETRYABLE_ERROR",
    "SYSTEM_OVERLOADED_ERROR",
    "backoff_seconds",
    "base_backoff_ms_of",
    "is_overload_error",
    "is_retryable_overload_error",
]

#: The label of an error a server returns when it is overloaded (backoff before a retry).
SYSTEM_OVERLOADED_ERROR: Final = "SystemOverloadedError"
#: The label of an error whose command may be retried whatever the command is.
RETRYABLE_ERROR: Final = "RetryableError"
#: BASE_BACKOFF: the backoff base, unless the error carries a positive ``baseBackoffMS``.
BASE_BACKOFF_MS: Final = 100.0
#: MAX_BACKOFF: no single backoff is longer (before jitter).
MAX_BACKOFF_MS: Final = 10_000.0
#: MAX_RETRIES: the default of the maxAdaptiveRetries option.
DEFAULT_MAX_ADAPTIVE_RETRIES: Final = 2


def is_overload_error(exc: BaseException) -> bool:
    """An overload error: it carries the ``SystemOverloadedError`` label."""
    return isinstance(exc, MongoError) and exc.has_error_label(SYSTEM_OVERLOADED_ERROR)


def is_retryable_overload_error(exc: BaseException) -> bool:
    """A retryable overload error: both ``SystemOverloadedError`` and ``RetryableError``
    (one label does not imply the other)."""
    return is_overload_error(exc) and isinstance(exc, MongoError) and exc.has_error_label(
        RETRYABLE_ERROR
    )


def base_backoff_ms_of(exc: BaseException) -> float | None:
    """The server-supplied ``baseBackoffMS`` of an error reply, when present and positive."""
    if not isinstance(exc, OperationFailure):
        return None
    details = exc.details
    if not isinstance(details, Mapping):
        return None
    value = details.get("baseBackoffMS")
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return None
    return float(value)


def backoff_seconds(retry: int, jitter: float, base_backoff_ms: float | None = None) -> float:
    """The sleep before retry number ``retry`` (the first retry is 1), in seconds:
    ``jitter * min(MAX_BACKOFF, base * 2**retry)``, ``jitter`` in [0, 1)."""
    base = base_backoff_ms if base_backoff_ms is not None else BASE_BACKOFF_MS
    return jitter * min(MAX_BACKOFF_MS, base * 2.0**retry) / 1000.0
