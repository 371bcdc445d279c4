"""A command whose document does not depend on the connection: most families are one.

Each family module has a function that builds the document and names the parser, returning a
:class:`CommandOperation`; only writes (batching) and cursors (pinned servers) need more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from asyncmongo.bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.base import Command, ConnectionInfo, Target, with_raw_data
from asyncmongo.core.operations.common import put_concerns
from asyncmongo.core.operations.replies import check_reply

__all__ = ["CommandOperation", "Explain", "checked_reply", "write_command"]

T = TypeVar("T")


def checked_reply(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """The reply itself, after raising the typed error of an ``ok: 0``."""
    check_reply(reply)
    return reply


class CommandOperation(Generic[T]):
    """``document`` on ``database``; the reply goes through ``parser``."""

    __slots__ = (
        "_parser",
        "codec_options",
        "database",
        "document",
        "generic",
        "name",
        "own_read_preference",
        "raw_data",
        "target",
        "unacknowledged",
    )

    def __init__(
        self,
        database: str,
        document: dict[str, Any],
        parser: Callable[[Mapping[str, Any]], T],
        target: Target,
        codec_options: CodecOptions = DEFAULT_CODEC_OPTIONS,
        *,
        unacknowledged: bool = False,
        generic: bool = False,
        own_read_preference: bool = False,
    ) -> None:
        self.database = database
        self.document = document
        self.name = next(iter(document))
        self.target = target
        self.codec_options = codec_options
        self.unacknowledged = unacknowledged
        self.raw_data: bool | None = None
        #: The user's own command document (``db.command``): causal consistency adds no
        #: afterClusterTime to it, and ``own_read_preference`` (given explicitly) is checked in
        #: a transaction rather than replaced by the transaction's.
        self.generic = generic
        self.own_read_preference = own_read_preference
        self._parser = parser

    def __repr__(self) -> str:
        return f"<CommandOperation {self.name} on {self.database}>"

    def build(self, conn: ConnectionInfo) -> Command:
        document = with_raw_data(self.document, self.raw_data, conn)
        return Command(self.database, document, unacknowledged=self.unacknowledged)

    def parse(self, reply: Mapping[str, Any]) -> T:
        return self._parser(reply or {"ok": 1})  # w:0: the executor hands over {ok: 1}


def write_command(
    database: str,
    document: dict[str, Any],
    parser: Callable[[Mapping[str, Any]], T],
    write_concern: WriteConcern,
    codec_options: CodecOptions,
) -> CommandOperation[T]:
    """A command that writes: sent to a writable server with ``write_concern`` (omitted when it
    is the server default), and unacknowledged (no reply awaited) for w:0."""
    put_concerns(document, write_concern=write_concern)
    return CommandOperation(
        database,
        document,
        parser,
        Target.write(),
        codec_options,
        unacknowledged=not write_concern.acknowledged,
    )


class Explain(Generic[T]):
    """``explain`` of another operation's command (the command as it would be sent)."""

    __slots__ = ("codec_options", "inner", "name", "target", "verbosity")

    def __init__(self, inner: Any, verbosity: str | None = None) -> None:
        self.inner = inner
        self.verbosity = verbosity
        self.name = "explain"
        self.target = inner.target
        self.codec_options = inner.codec_options

    def build(self, conn: ConnectionInfo) -> Command:
        inner = self.inner.build(conn)
        document: dict[str, Any] = {"explain": inner.document}
        if self.verbosity is not None:
            document["verbosity"] = self.verbosity
        return Command(inner.database, document)

    def parse(self, reply: Mapping[str, Any]) -> Mapping[str, Any]:
        check_reply(reply)
        return reply
