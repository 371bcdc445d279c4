"""Known gaps: the only failures the unified runner turns into skips, each reviewed.

Three kinds, and nothing else is excused (a failing test outside them fails):

- :data:`SIMULATOR_GAPS`: tests (by path under spec_tests/data and description) that fail
  because asyncmongo.testing does not do what mongod/mongos do, each with the specific
  missing behaviour. Only against the simulator: with ``MONGODB_URI`` they must pass.
- :data:`KNOWN_DRIVER_GAPS`: tests that fail because asyncmongo lacks a behaviour, each
  naming it and its issue; kept apart so they are not mistaken for simulator limits; and
  :data:`API_NOT_BUILT`, the API methods/parameters the runner may find missing;
- a precise predicate on the simulator's own answer (:func:`simulator_gap_reason`): an
  unknown command, pipeline stage or fail point that the test itself names, or a limit the
  store states ("not supported by the asyncmongo store").

A listed test that passes is reported as a failure ("remove the entry"), so the lists
cannot go stale and hide a later regression.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from asyncmongo.errors import OperationFailure

__all__ = [
    "API_NOT_BUILT",
    "KNOWN_DRIVER_GAPS",
    "SIMULATOR_GAPS",
    "known_gap_reason",
    "simulator_gap_reason",
]

#: (path under spec_tests/data, test description) -> what asyncmongo.testing lacks.
SIMULATOR_GAPS: Final[Mapping[tuple[str, str], str]] = {}

#: (path under spec_tests/data, test description) -> the driver behaviour that is missing,
#: with its issue. These are driver bugs, listed only so CI stays green while they are open.
KNOWN_DRIVER_GAPS: Final[Mapping[tuple[str, str], str]] = {}

#: asyncmongo API pieces not built yet (``ApiMissing.what`` -> the missing behaviour and its
#: issue). Any other missing method or parameter fails the test: it is a regression or a
#: runner mapping bug, never a silent skip.
API_NOT_BUILT: Final[Mapping[str, str]] = {}


def known_gap_reason(key: tuple[str, str], *, simulated: bool) -> str | None:
    """The listed reason a test fails: a known driver gap anywhere, a simulator gap only
    against the simulator."""
    reason = KNOWN_DRIVER_GAPS.get(key)
    if reason is not None:
        return f"known driver gap: {reason}"
    if simulated:
        reason = SIMULATOR_GAPS.get(key)
        if reason is not None:
            return f"simulator gap: {reason}"
    return None


#: Server answers that mean "the simulator does not implement this".
_SIMULATOR_CODES: Final = {
    59: "command",            # CommandNotFound
    40324: "pipeline stage",  # Unrecognized pipeline stage name
    115: "command",           # CommandNotSupported
}


_QUOTED: Final = re.compile(r"'([^']+)'")


def simulator_gap_reason(exc: BaseException, test_text: str) -> str | None:
    """Why ``exc`` (from the simulator) shows a missing server feature, if it does.

    An unknown command, stage or fail point is excused only when the test itself names it
    (``test_text``: the test and its file's entities as JSON): a driver that sends a wrong
    command name gets the same answer, and that is a driver bug.
    """
    if not isinstance(exc, OperationFailure):
        return None
    message = str((exc.details or {}).get("errmsg", exc))
    if exc.code in _SIMULATOR_CODES or "unknown fail point" in message:
        quoted = _QUOTED.search(message)
        name = quoted.group(1).lstrip("$") if quoted else ""
        if not name or not re.search(rf"\b{re.escape(name)}\b", test_text):
            return None
        what = _SIMULATOR_CODES.get(exc.code or 0, "fail point")
        return f"asyncmongo.testing lacks this {what} (the test uses it): {message}"
    if "not supported by the asyncmongo store" in message:
        return f"asyncmongo.testing's store lacks this: {message}"
    return None
