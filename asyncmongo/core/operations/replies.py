"""Reply checking: turn a server reply into the typed exception PyMongo users expect.

``ok: 0`` becomes OperationFailure or its specific subclass (NotPrimaryError for the SDAM
state-change codes, CursorNotFound, ExecutionTimeout, DuplicateKeyError); the write commands'
``writeErrors``/``writeConcernError`` become WriteError/WriteConcernError for single writes,
while bulk writes collect them (see ``bulk``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from asyncmongo.core.error_policy import is_state_change_error
from asyncmongo.errors import (
    CursorNotFound,
    DuplicateKeyError,
    ExecutionTimeout,
    NotPrimaryError,
    OperationFailure,
    WriteConcernError,
    WriteError,
)

__all__ = [
    "check_reply",
    "check_write_command_reply",
    "check_write_reply",
    "is_namespace_not_found",
    "is_ok",
    "raise_write_concern_error",
    "raise_write_error",
]

CURSOR_NOT_FOUND = 43
MAX_TIME_MS_EXPIRED = 50
NAMESPACE_NOT_FOUND = 26
DUPLICATE_KEY_CODES = frozenset({11000, 11001, 12582})


def is_ok(reply: Mapping[str, Any]) -> bool:
    """``ok: 1`` (a double from servers, any number equal to 1, or ``true``).

    ``True == 1`` and ``False != 1``, so one comparison is the whole rule; no separate bool
    test is needed (it used to cost an isinstance call, two or three times per operation).
    """
    ok: bool = reply.get("ok") == 1
    return ok


def is_namespace_not_found(reply: Mapping[str, Any]) -> bool:
    """An ``ok: 0`` NamespaceNotFound: the collection does not exist, which count, listIndexes
    and the idempotent drops answer as empty or done instead of failing."""
    return not is_ok(reply) and reply.get("code") == NAMESPACE_NOT_FOUND


def _code(doc: Mapping[str, Any]) -> int | None:
    code = doc.get("code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _errmsg(doc: Mapping[str, Any], default: str = "command failed") -> str:
    message = doc.get("errmsg", doc.get("$err"))
    return message if isinstance(message, str) else default


def check_reply(reply: Mapping[str, Any]) -> None:
    """Raise the typed error of an ``ok: 0`` reply; an ``ok: 1`` reply passes (``is_ok``,
    inline: every operation's parse runs this)."""
    if reply.get("ok") == 1:
        return
    code = _code(reply)
    message = _errmsg(reply)
    labels = reply.get("errorLabels") or ()
    if is_state_change_error(code, message):
        raise NotPrimaryError(message, errors=dict(reply), error_labels=labels)
    if code == CURSOR_NOT_FOUND:
        raise CursorNotFound(message, code, reply)
    if code == MAX_TIME_MS_EXPIRED:
        raise ExecutionTimeout(message, code, reply)
    if code in DUPLICATE_KEY_CODES:
        raise DuplicateKeyError(message, code, reply)
    raise OperationFailure(message, code, reply)


def raise_write_error(error: Mapping[str, Any]) -> NoReturn:
    """One ``writeErrors`` entry as WriteError (DuplicateKeyError for a unique index)."""
    code = _code(error)
    message = _errmsg(error, "write failed")
    if code in DUPLICATE_KEY_CODES:
        raise DuplicateKeyError(message, code, error)
    raise WriteError(message, code, error)


def raise_write_concern_error(error: Mapping[str, Any], reply: Mapping[str, Any]) -> NoReturn:
    """A ``writeConcernError``; its labels are the reply's (the server puts them there)."""
    labels = list(reply.get("errorLabels") or ()) + list(error.get("errorLabels") or ())
    code = _code(error)
    message = _errmsg(error, "write concern failed")
    if code == MAX_TIME_MS_EXPIRED:
        raise ExecutionTimeout(message, code, error, labels)
    raise WriteConcernError(message, code, error, labels)


def check_write_command_reply(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """A command that writes without ``writeErrors`` (createIndexes, drop, findAndModify, ...):
    the command error, then its ``writeConcernError``; the reply itself when neither."""
    check_reply(reply)
    concern_error = reply.get("writeConcernError")
    if isinstance(concern_error, Mapping):
        raise_write_concern_error(concern_error, reply)
    return reply


def check_write_reply(reply: Mapping[str, Any]) -> None:
    """A single write (insert_one, update_one, ...): first write error, then concern error."""
    check_reply(reply)
    errors = reply.get("writeErrors")
    if errors:
        raise_write_error(errors[-1])
    concern_error = reply.get("writeConcernError")
    if concern_error is not None and isinstance(concern_error, Mapping):
        raise_write_concern_error(concern_error, reply)
