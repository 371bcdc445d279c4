"""Error replies as mongod words them: ``ok: 0``, ``errmsg``, ``code``, ``codeName`` and the
``RetryableWriteError`` label mongod 4.4+ adds on a retryable write (drivers rely on the label,
not on the code, to retry)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.failpoint import RETRYABLE_WRITE_CODES, is_retryable_write

CODE_NAMES = {
    2: "BadValue",
    13: "Unauthorized",
    18: "AuthenticationFailed",
    59: "CommandNotFound",
    186: "ClientMetadataCannotBeMutated",
    91: "ShutdownInProgress",
    189: "PrimarySteppedDown",
    352: "UnsupportedOpQueryCommand",
    10107: "NotWritablePrimary",
    13435: "NotPrimaryNoSecondaryOk",
    13436: "NotPrimaryOrSecondary",
}


def error_reply(code: int, errmsg: str, command: Mapping[str, Any] | None = None,
                ) -> dict[str, Any]:
    """An ``ok: 0`` reply; labelled retryable when ``command`` is a retryable write."""
    reply: dict[str, Any] = {"ok": 0.0, "errmsg": errmsg, "code": code}
    if code in CODE_NAMES:
        reply["codeName"] = CODE_NAMES[code]
    if command is not None and code in RETRYABLE_WRITE_CODES and is_retryable_write(command):
        reply["errorLabels"] = ["RetryableWriteError"]
    return reply
