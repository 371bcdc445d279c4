"""The store's one error type: a server error with its code, name and message.

Every failure inside the store raises :class:`StoreError`; ``Store.handle`` turns it into the
error document a real server sends (``{ok: 0, errmsg, code, codeName, errorLabels?}``).
"""

from __future__ import annotations

from typing import Any

CODE_NAMES: dict[int, str] = {
    1: "InternalError",
    2: "BadValue",
    9: "FailedToParse",
    11000: "DuplicateKey",
    14: "TypeMismatch",
    16: "InvalidLength",
    26: "NamespaceNotFound",
    27: "IndexNotFound",
    28: "PathNotViable",
    40: "ConflictingUpdateOperators",
    43: "CursorNotFound",
    47: "NoMatchingDocument",
    260: "InvalidResumeToken",
    280: "ChangeStreamFatalError",
    286: "ChangeStreamHistoryLost",
    48: "NamespaceExists",
    52: "DollarPrefixedFieldName",
    53: "InvalidIdField",
    56: "EmptyFieldName",
    57: "DottedFieldName",
    59: "CommandNotFound",
    66: "ImmutableField",
    67: "CannotCreateIndex",
    72: "InvalidOptions",
    73: "InvalidNamespace",
    85: "IndexOptionsConflict",
    86: "IndexKeySpecsConflict",
    112: "WriteConflict",
    121: "DocumentValidationFailure",
    136: "CappedPositionLost",
    149: "ViewDepthLimitExceeded",
    150: "GraphContainsCycle",
    166: "CommandNotSupportedOnView",
    115: "CommandNotSupported",
    168: "InvalidPipelineOperator",
    225: "TransactionTooOld",
    244: "TransactionAborted",
    251: "NoSuchTransaction",
    256: "TransactionCommitted",
    263: "OperationNotSupportedInTransaction",
    359: "CannotConvertIndexToUnique",
    15955: "Location15955",
    16410: "Location16410",
    31082: "SearchNotEnabled",
    31253: "Location31253",
    31254: "Location31254",
    40324: "Location40324",
    40352: "Location40352",
    40323: "Location40323",
    51091: "Location51091",
}


class StoreError(Exception):
    """A server-side error: ``code`` and ``errmsg`` as MongoDB reports them."""

    def __init__(
        self,
        code: int,
        errmsg: str,
        *,
        labels: tuple[str, ...] = (),
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{errmsg} (code {code})")
        self.code = code
        self.errmsg = errmsg
        self.code_name = CODE_NAMES.get(code, f"Location{code}")
        self.labels = labels
        self.extra = dict(extra or {})

    def to_reply(self) -> dict[str, Any]:
        """The command reply document for this error."""
        reply: dict[str, Any] = {
            "ok": 0.0,
            "errmsg": self.errmsg,
            "code": self.code,
            "codeName": self.code_name,
        }
        reply.update(self.extra)
        if self.labels:
            reply["errorLabels"] = list(self.labels)
        return reply

    def to_write_error(self, index: int) -> dict[str, Any]:
        """The ``writeErrors`` entry for this error at batch position ``index``."""
        entry: dict[str, Any] = {"index": index, "code": self.code, "errmsg": self.errmsg}
        entry.update(self.extra)
        return entry


def bad_value(errmsg: str) -> StoreError:
    """The common ``BadValue`` (code 2) error."""
    return StoreError(2, errmsg)
