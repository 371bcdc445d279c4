"""``configureFailPoint``: the fail points a simulated member knows, by name.

``failCommand`` and its getMore variant ``failGetMoreAfterCursorCheckout`` are parsed by
:mod:`asyncmongo.testing.failpoint`, ``onPrimaryTransactionalWrite`` by
:mod:`asyncmongo.testing.primary_write_failpoint`; :func:`configure` picks the parser by the
fail point's name. Pure: no asyncio.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.errors import ConfigurationError
from asyncmongo.testing import primary_write_failpoint
from asyncmongo.testing.failpoint import FailPointState

#: mongod's fail point that fails a getMore once its cursor is checked out (errorCode).
GET_MORE_AFTER_CHECKOUT = "failGetMoreAfterCursorCheckout"
#: The codes mongod labels ResumableChangeStreamError on a change stream's getMore (the
#: change streams spec's list of resumable codes).
RESUMABLE_CHANGE_STREAM_CODES = frozenset({6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602,
                                           13435, 13436, 63, 150, 13388, 234, 133})


def configure(points: dict[str, FailPointState], command: Mapping[str, Any]) -> None:
    """Apply one ``configureFailPoint`` command to a member's fail points."""
    name = command.get("configureFailPoint")
    if name == primary_write_failpoint.NAME:
        points[name] = primary_write_failpoint.PrimaryWritePoint.from_command(command)
        return
    if name == GET_MORE_AFTER_CHECKOUT:
        points[name] = FailPointState.from_command(_get_more_after_checkout(command))
        return
    if name != "failCommand":
        raise ConfigurationError(f"unknown fail point {name!r} (only failCommand, "
                                 f"{GET_MORE_AFTER_CHECKOUT} and "
                                 f"{primary_write_failpoint.NAME} exist here)")
    points[name] = FailPointState.from_command(command)


def _get_more_after_checkout(command: Mapping[str, Any]) -> dict[str, Any]:
    """``failGetMoreAfterCursorCheckout`` as a failCommand on getMore. mongod labels the
    error ResumableChangeStreamError when the cursor is a change stream's and the code is
    resumable; the simulator labels it by the code alone (the specs use it on change
    streams only)."""
    data = dict(command.get("data") or {})
    data["failCommands"] = ["getMore"]
    code = data.get("errorCode")
    if "errorLabels" not in data and code in RESUMABLE_CHANGE_STREAM_CODES:
        data["errorLabels"] = ["ResumableChangeStreamError"]
    return {**command, "data": data}
