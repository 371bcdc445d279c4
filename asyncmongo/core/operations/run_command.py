"""``Database.command`` / ``run_command`` (specs/run-command).

The command is sent as the user wrote it: no read or write concern is added (the spec says
the user controls the document); only the read preference decides where it runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.operations.base import Command, ConnectionInfo, Target
from asyncmongo.core.operations.command import CommandOperation
from asyncmongo.core.operations.common import Namespace, check_document
from asyncmongo.core.operations.cursors import CursorPage, parse_cursor_page
from asyncmongo.core.operations.replies import check_reply
from asyncmongo.core.selection import ReadPreference
from asyncmongo.errors import InvalidArgument, InvalidOperation

__all__ = ["RunCommand", "command_document", "run_command", "run_cursor_command"]


def command_document(
    command: str | Mapping[str, Any], value: Any = 1, **kwargs: Any
) -> dict[str, Any]:
    """PyMongo's forms: ``"ping"`` (→ ``{ping: 1}``), ``("count", "coll")`` via ``value``,
    or a document; ``kwargs`` are appended as extra fields."""
    if isinstance(command, str):
        document: dict[str, Any] = {command: value}
    else:
        document = dict(check_document(command, "command"))
    if not document:
        raise InvalidArgument("the command document must not be empty")
    document.update(kwargs)
    return document


class RunCommand:
    """``db.command``: the user's document, sent as written; ``check`` raises the reply's
    OperationFailure (and subclasses) on ``ok: 0``, else the reply is returned as it is.

    Its own small class rather than a CommandOperation: every ``db.command`` builds one, and
    what the generic command never varies (it is ``generic``, acknowledged, without rawData)
    is on the class instead of stored per call.
    """

    __slots__ = (
        "check",
        "codec_options",
        "database",
        "document",
        "name",
        "own_read_preference",
        "target",
    )

    #: The user's own document: causal consistency adds no afterClusterTime to it, and in a
    #: transaction an explicitly given read preference is checked, not replaced.
    generic = True
    unacknowledged = False

    def __init__(
        self,
        database: str,
        document: dict[str, Any],
        target: Target,
        codec_options: CodecOptions,
        check: bool = True,
        own_read_preference: bool = False,
    ) -> None:
        self.database = database
        self.document = document
        self.name: str = next(iter(document))
        self.target = target
        self.codec_options = codec_options
        self.check = check
        self.own_read_preference = own_read_preference

    def __repr__(self) -> str:
        return f"<RunCommand {self.name} on {self.database}>"

    def build(self, conn: ConnectionInfo) -> Command:
        return Command(self.database, self.document)

    def parse(self, reply: Mapping[str, Any]) -> Mapping[str, Any]:
        if not reply:  # as CommandOperation: an empty reply reads as {ok: 1}
            return {"ok": 1}
        if self.check and not reply.get("ok") == 1:  # (is_ok, inline)
            check_reply(reply)
        return reply


def run_command(
    database: str,
    document: dict[str, Any],
    read_preference: ReadPreference,
    codec_options: CodecOptions,
    *,
    check: bool = True,
    own_read_preference: bool = False,
) -> RunCommand:
    """Run ``document``; ``check`` raises OperationFailure (and subclasses) on ``ok: 0``.
    ``own_read_preference``: the caller gave ``read_preference`` explicitly."""
    return RunCommand(
        database,
        document,
        Target.read(read_preference),
        codec_options,
        check,
        own_read_preference,
    )


def run_cursor_command(
    database: str,
    document: dict[str, Any],
    read_preference: ReadPreference,
    codec_options: CodecOptions,
    *,
    own_read_preference: bool = False,
) -> CommandOperation[CursorPage]:
    """run-command's runCursorCommand: the reply must hold a cursor (else InvalidOperation)."""
    namespace = Namespace(database, "$cmd")

    def parse(reply: Mapping[str, Any]) -> CursorPage:
        check_reply(reply)
        if not isinstance(reply.get("cursor"), Mapping):
            raise InvalidOperation(f"{next(iter(document))} did not return a cursor")
        return parse_cursor_page(reply, namespace)

    return CommandOperation(
        database,
        document,
        parse,
        Target.read(read_preference),
        codec_options,
        generic=True,
        own_read_preference=own_read_preference,
    )
