"""Error replies as mongod words them: ``ok: 0``, ``errmsg``, ``code``, ``codeName`` and the
labels mongod 4.4+ adds: ``RetryableWriteError`` on a retryable write,
``TransientTransactionError`` inside a transaction (drivers rely on the labels, not on the
code, to retry)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.codes import code_name
from asyncmongo.testing.failpoint import server_error_labels


def error_reply(code: int, errmsg: str, command: Mapping[str, Any] | None = None,
                ) -> dict[str, Any]:
    """An ``ok: 0`` reply, labelled as mongod labels it for ``command`` (when given)."""
    reply: dict[str, Any] = {"ok": 0.0, "errmsg": errmsg, "code": code,
                             "codeName": code_name(code)}
    labels = server_error_labels(command, code) if command is not None else []
    if labels:
        reply["errorLabels"] = labels
    return reply
