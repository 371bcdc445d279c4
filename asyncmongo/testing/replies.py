"""Error replies as mongod words them: ``ok: 0``, ``errmsg``, ``code``, ``codeName`` and the
``RetryableWriteError`` label mongod 4.4+ adds on a retryable write (drivers rely on the label,
not on the code, to retry)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.codes import code_name
from asyncmongo.testing.failpoint import RETRYABLE_WRITE_CODES, is_retryable_write


def error_reply(code: int, errmsg: str, command: Mapping[str, Any] | None = None,
                ) -> dict[str, Any]:
    """An ``ok: 0`` reply; labelled retryable when ``command`` is a retryable write."""
    reply: dict[str, Any] = {"ok": 0.0, "errmsg": errmsg, "code": code,
                             "codeName": code_name(code)}
    if command is not None and code in RETRYABLE_WRITE_CODES and is_retryable_write(command):
        reply["errorLabels"] = ["RetryableWriteError"]
    return reply
