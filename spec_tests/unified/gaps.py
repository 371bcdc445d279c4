"""Known gaps: driver features not built yet, and server features the simulator lacks.

A test that FAILS while it exercises a gap is skipped with the gap's reason and the actual
failure; a test that passes is never touched. Driver gaps close by themselves: each has a
probe that looks for the feature in asyncmongo's source (a name the feature cannot exist
without), and once the probe finds it the failure is reported as a failure again.

Simulator gaps are recognised by the server's own answer (an unknown command, pipeline stage
or fail point), and only against the simulator: with ``MONGODB_URI`` nothing is excused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from asyncmongo.errors import OperationFailure

__all__ = [
    "DRIVER_GAPS",
    "DriverGap",
    "driver_gap_reason",
    "expects_server_error",
    "simulator_content_gap",
    "simulator_error_gap",
    "simulator_gap_reason",
]

_PACKAGE: Final = Path(__file__).resolve().parents[2] / "asyncmongo"


@cache
def _api_source() -> str:
    """The source of the API and runtime layers (where retries and sessions would live)."""
    files = [*_PACKAGE.glob("*.py"), *(_PACKAGE / "runtime").glob("*.py")]
    return "\n".join(path.read_text(encoding="utf-8") for path in files)


def _uses(identifier: str) -> Callable[[], bool]:
    pattern = re.compile(rf"\b{re.escape(identifier)}\b")
    return lambda: bool(pattern.search(_api_source()))


def _says(text: str) -> Callable[[], bool]:
    return lambda: text in _api_source()


@dataclass(frozen=True, slots=True)
class DriverGap:
    """A driver feature that is not built: the files (or test descriptions) that exercise
    it, and how to see that it landed."""

    reason: str
    pattern: re.Pattern[str]
    built: Callable[[], bool]


DRIVER_GAPS: Final = (
    DriverGap("retryable reads are not built yet (issue #10): the API does not read "
              "ClientOptions.retry_reads",
              re.compile(r"(?i)retryable[- ]reads?"), _uses("retry_reads")),
    DriverGap("retryable writes are not built yet (issue #10): the API does not read "
              "ClientOptions.retry_writes",
              re.compile(r"(?i)retryable[- ]writes?"), _uses("retry_writes")),
    # Load balancers spec: a pool that pins connections to cursors and transactions must
    # report them in its WaitQueueTimeoutError ("connections in use by cursors: n, ..."),
    # so that text appears in the source the day pinning is built.
    DriverGap("connection pinning in load-balanced mode (cursors and transactions keep "
              "their connection) is not built yet",
              re.compile(r"load-balancers/(cursors|transactions|wait-queue-timeouts)\.json"
                         r"|(?i:pinned connections)"),
              _says("in use by cursors")),
)


def driver_gap_reason(path: Path, description: str = "") -> str | None:
    """The reason a failure of a test (by file path or description) is an unbuilt feature."""
    text = f"{path.as_posix()} {description}"
    for gap in DRIVER_GAPS:
        if gap.pattern.search(text) and not gap.built():
            return gap.reason
    return None


#: Server answers that mean "the simulator does not implement this".
_SIMULATOR_CODES: Final = {
    59: "command",            # CommandNotFound
    40324: "pipeline stage",  # Unrecognized pipeline stage name
    115: "command",           # CommandNotSupported
}


def simulator_gap_reason(exc: BaseException) -> str | None:
    """Why ``exc`` (from the simulator) shows a missing server feature, if it does."""
    if not isinstance(exc, OperationFailure):
        return None
    message = str((exc.details or {}).get("errmsg", exc))
    if exc.code in _SIMULATOR_CODES:
        return (f"asyncmongo.testing lacks this {_SIMULATOR_CODES[exc.code]}: {message}")
    if "unknown fail point" in message:
        return f"asyncmongo.testing lacks this fail point: {message}"
    if "not supported by the asyncmongo store" in message:
        return f"asyncmongo.testing's store lacks this: {message}"
    return None


def _mentions(value: object, key: str) -> bool:
    """Whether ``key`` appears as a document key anywhere in ``value``."""
    if isinstance(value, dict):
        return key in value or any(_mentions(v, key) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_mentions(v, key) for v in value)
    return False


#: (a key the test uses, why the simulator cannot run it).
_SIMULATOR_CONTENT_GAPS: Final = (
    ("collation", "asyncmongo.testing ignores collations (no locale-aware string "
                  "comparison in its store)"),
    ("viewOn", "asyncmongo.testing has no views"),
    ("clusteredIndex", "asyncmongo.testing has no clustered collections"),
    ("timeseries", "asyncmongo.testing has no time series collections"),
    ("changeStreamPreAndPostImages", "asyncmongo.testing has no change streams"),
    ("returnKey", "asyncmongo.testing ignores returnKey and showRecordId"),
    ("tailable", "asyncmongo.testing has no tailable cursors"),
    ("recoveryToken", "asyncmongo.testing's mongos returns no recoveryToken"),
)


def simulator_content_gap(test: object, initial_data: object) -> str | None:
    """Why a failing test is beyond the simulator, judged by what the test uses."""
    for key, reason in _SIMULATOR_CONTENT_GAPS:
        if _mentions(test, key) or _mentions(initial_data, key):
            return reason
    return None


def expects_server_error(expected: dict[str, object]) -> bool:
    """An expectedError that only a server reply can satisfy."""
    return expected.get("isClientError") is False or any(
        key in expected for key in ("errorCode", "errorCodeName", "errorResponse"))


def simulator_error_gap(expected: Mapping[str, Any], exc: BaseException) -> str | None:
    """Why a server error from the simulator misses what the test expects of a real one.

    mongod and mongos label errors inside a transaction TransientTransactionError
    themselves (the driver only labels network and selection errors), and name every code
    ("Interrupted" for 11601); asyncmongo.testing's failCommand does neither.
    """
    reply = getattr(exc, "details", None) or getattr(exc, "errors", None)
    if not isinstance(reply, Mapping) or "failCommand" not in str(reply.get("errmsg", "")):
        return None
    labels: frozenset[str] = getattr(exc, "error_labels", frozenset())
    if ("TransientTransactionError" in expected.get("errorLabelsContain", ())
            and "TransientTransactionError" not in labels):
        return ("asyncmongo.testing's failCommand does not add the TransientTransactionError "
                "label mongod/mongos add to this error inside a transaction")
    name = str(reply.get("codeName", ""))
    if "errorCodeName" in expected and name.startswith("Location"):
        return (f"asyncmongo.testing's failCommand names code {reply.get('code')} {name!r}, "
                f"not {expected['errorCodeName']!r}")
    return None
