"""The insert/update/delete write commands, one batch at a time.

A :class:`WriteCommand` holds the statements still to send; ``build`` fits as many as the
connection's limits allow into one OP_MSG (``asyncmongo.core.wire.batching``) and ``parse``
returns a :class:`BatchReply` saying how many went. The caller (single writes, bulk) loops
until every statement was sent, so a bulk larger than maxWriteBatchSize/maxMessageSizeBytes
becomes several commands, each of them selected, sent and (later) retried on its own.

A single write without command-level options (the usual ``insert_one``, ``update_one``, ...)
always goes whole in one command: :class:`InsertOne` and :class:`WriteOne` build it without
the batching, from the collection's :class:`WriteContext`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from asyncmongo.bson.codec import encode
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.base import Command, ConnectionInfo, Target, with_raw_data
from asyncmongo.core.operations.common import Namespace, put
from asyncmongo.core.operations.replies import check_reply
from asyncmongo.core.operations.statements import StatementKind, WriteStatement
from asyncmongo.core.wire.batching import COMMAND_OVERHEAD, BatchLimits, split_batches
from asyncmongo.core.wire.op_msg import DocumentSequence

__all__ = [
    "DEFAULT_WRITE_OPTIONS",
    "BatchReply",
    "InsertOne",
    "WriteCommand",
    "WriteContext",
    "WriteOne",
    "WriteOptions",
    "write_options",
]

#: Room kept for the command document and its generic fields on the fast path (bytes).
FAST_PATH_ALLOWANCE = 16 * 1024


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """Command-level options of a write command (None: not sent)."""

    ordered: bool = True
    bypass_document_validation: bool | None = None
    comment: Any = None
    let: Mapping[str, Any] | None = None
    raw_data: bool | None = None


#: The options of a single write without any (insert_one, update_one, ...): one shared object.
DEFAULT_WRITE_OPTIONS: Final = WriteOptions()
#: Each command's document sequence, by command name (a str key hashes faster than an enum).
_SEQUENCES = {kind.value: kind.sequence for kind in StatementKind}


def write_options(
    ordered: bool = True,
    bypass_document_validation: bool | None = None,
    comment: Any = None,
    let: Mapping[str, Any] | None = None,
    raw_data: bool | None = None,
) -> WriteOptions:
    """``WriteOptions(...)``, the shared default object when nothing is given."""
    if (
        ordered is True
        and bypass_document_validation is None
        and comment is None
        and let is None
        and raw_data is None
    ):
        return DEFAULT_WRITE_OPTIONS
    return WriteOptions(ordered, bypass_document_validation, comment, let, raw_data)


class BatchReply:
    """The reply to one batch and which statements it covered (``start`` .. ``start+count``).

    A plain ``__slots__`` class rather than a frozen dataclass: every write builds one, and a frozen
    dataclass's ``__init__`` costs an ``object.__setattr__`` call per field. Treat it as
    immutable all the same (equality, hash and repr are the dataclass's).
    """

    __slots__ = ("acknowledged", "count", "reply", "start")

    def __init__(
        self, reply: Mapping[str, Any], start: int, count: int, acknowledged: bool
    ) -> None:
        self.reply = reply
        self.start = start
        self.count = count
        self.acknowledged = acknowledged

    def _fields(self) -> tuple[Mapping[str, Any], int, int, bool]:
        return (self.reply, self.start, self.count, self.acknowledged)

    def __repr__(self) -> str:
        return (
            f"BatchReply(reply={self.reply!r}, start={self.start!r}, count={self.count!r}, "
            f"acknowledged={self.acknowledged!r})"
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, BatchReply)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())


class WriteCommand:
    """``insert``/``update``/``delete`` of ``statements[start:]`` (as many as fit)."""

    __slots__ = (
        "_batch",
        "_encoded",
        "acknowledged",
        "codec_options",
        "kind",
        "name",
        "namespace",
        "options",
        "start",
        "statements",
        "target",
        "write_concern",
    )

    def __init__(
        self,
        namespace: Namespace,
        kind: StatementKind,
        statements: Sequence[WriteStatement],
        write_concern: WriteConcern,
        codec_options: CodecOptions,
        options: WriteOptions = DEFAULT_WRITE_OPTIONS,
        *,
        start: int = 0,
        encoded: list[bytes] | None = None,
    ) -> None:
        self.namespace = namespace
        self.kind = kind
        self.name = kind._value_  # .value is a Python-level property call (enum, 3.11)
        self.statements = statements
        self.write_concern = write_concern
        #: Read on every build, parse and retry decision (a write concern is immutable).
        self.acknowledged = write_concern.acknowledged
        self.codec_options = codec_options
        self.options = options
        self.start = start
        self.target = Target.write()
        self._encoded = encoded
        self._batch = 0

    def encoded(self) -> list[bytes]:
        """Every statement as BSON (encoded once, shared by the follow-up batches)."""
        if self._encoded is None:
            opts = self.codec_options
            self._encoded = [encode(s.document, codec_options=opts) for s in self.statements]
        return self._encoded

    def command_document(self) -> dict[str, Any]:
        options = self.options
        command: dict[str, Any] = {self.name: self.namespace.collection}
        command["ordered"] = options.ordered
        if not self.write_concern.is_server_default:
            command["writeConcern"] = self.write_concern.document
        if options is not DEFAULT_WRITE_OPTIONS:  # insert_one, update_one, ... : none of them
            put(command, "bypassDocumentValidation", options.bypass_document_validation)
            put(command, "comment", options.comment)
            put(command, "let", options.let)
        return command

    def build(self, conn: ConnectionInfo) -> Command:
        command = self.command_document()
        if self.options.raw_data is not None:
            command = with_raw_data(command, self.options.raw_data, conn)
        encoded = self.encoded()
        statements = encoded[self.start :] if self.start else encoded
        batch = self._fits_whole(statements, conn) or self._first_batch(
            command, statements, conn
        )
        self._batch = batch
        documents = statements if batch == len(statements) else statements[:batch]
        sequence = DocumentSequence(_SEQUENCES[self.name], documents)
        return Command(
            self.namespace.database,
            command,
            (sequence,),
            unacknowledged=not self.acknowledged,
        )

    def _fits_whole(self, statements: list[bytes], conn: ConnectionInfo) -> int:
        """All statements, when they obviously fit one message (0: work it out exactly).

        Without ``let``/``comment`` the command document and the fields added to it later
        (session, cluster time, $db, API version) stay far below FAST_PATH_ALLOWANCE, so the
        exact computation (an extra encode of the command) is only needed near the limits.
        """
        if self.options.let is not None or self.options.comment is not None:
            return 0
        if len(statements) > conn.max_write_batch_size:
            return 0
        largest = max(map(len, statements))
        overhead = 0 if self.kind is StatementKind.INSERT else COMMAND_OVERHEAD
        allowed = conn.max_bson_object_size + overhead
        total = sum(map(len, statements))
        if largest > allowed or total + FAST_PATH_ALLOWANCE > conn.max_message_size_bytes:
            return 0
        split = getattr(conn, "batch_split_bytes", None)  # automatic encryption's 2 MiB
        if split is not None and total > split and len(statements) > 1:
            return 0
        return len(statements)

    def _first_batch(
        self, command: dict[str, Any], statements: list[bytes], conn: ConnectionInfo
    ) -> int:
        limits = BatchLimits(
            conn.max_bson_object_size,
            conn.max_message_size_bytes,
            conn.max_write_batch_size,
            getattr(conn, "batch_split_bytes", None),  # automatic encryption's 2 MiB
        )
        size = len(encode(command)) + len(self.namespace.database) + 12  # + "$db"
        return len(split_batches(self.name, statements, size, limits)[0])

    def parse(self, reply: Mapping[str, Any]) -> BatchReply:
        if reply or self.acknowledged:  # w:0 has no reply; one inside a transaction does
            check_reply(reply)
        return BatchReply(reply, self.start, self._batch, self.acknowledged)

    def rest(self, sent: int) -> WriteCommand | None:
        """The command for what is left after ``sent`` more statements went (None: done)."""
        start = self.start + sent
        if start >= len(self.statements):
            return None
        return WriteCommand(
            self.namespace,
            self.kind,
            self.statements,
            self.write_concern,
            self.codec_options,
            self.options,
            start=start,
            encoded=self.encoded(),
        )


def _single_write_reply(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    """A single write's reply: its error if ``ok: 0``, else the reply (write errors and a
    write concern error are the caller's to raise)."""
    if not reply.get("ok") == 1:  # is_ok, inline (check_reply raises the reply's error)
        check_reply(reply)
    return reply


def _built_exactly(
    context: WriteContext, statement: WriteStatement, conn: ConnectionInfo
) -> Command:
    """A single write near the size limits, built by the general write command (its exact
    fitting, and its DocumentTooLarge)."""
    command = WriteCommand(
        context.namespace, statement.kind, [statement], context.write_concern,
        context.codec_options,
    )
    return command.build(conn)


class WriteContext:
    """What every single write (``insert_one``, ``update_one``, ``delete_one``, ...) through
    one collection object shares: its namespace, codec options, ``_id`` class and write
    concern (with what the command sends of it), computed once per collection (its settings
    never change) instead of once per call."""

    __slots__ = (
        "acknowledged",
        "codec_options",
        "collection",
        "database",
        "namespace",
        "new_id",
        "write_concern",
        "write_concern_sent",
    )

    def __init__(
        self,
        namespace: Namespace,
        write_concern: WriteConcern,
        codec_options: CodecOptions,
        new_id: Callable[[], Any],
    ) -> None:
        self.namespace = namespace
        self.database = namespace.database
        self.collection = namespace.collection
        self.write_concern = write_concern
        self.acknowledged = write_concern.acknowledged
        #: False when it is the server's default (no ``writeConcern`` is sent).
        self.write_concern_sent = not write_concern.is_server_default
        self.codec_options = codec_options
        #: What makes a missing ``_id`` (the ObjectId class documents decode to).
        self.new_id = new_id


class InsertOne:
    """``insert_one(document)`` without options, acknowledged: the ``insert`` command that
    :class:`WriteCommand` builds for one statement and the default options, without its
    batching (one document always goes whole, or raises DocumentTooLarge).

    ``statements`` holds the document (an insert statement is the document itself; the
    executor's retryable-write check asks for them). ``parse`` raises the error of an
    ``ok: 0`` reply and returns the reply, whose write errors ``insert_one`` raises.
    """

    __slots__ = ("codec_options", "context", "statements")

    name = "insert"
    #: Only acknowledged writes take this path (``insert_one`` sends w:0 by WriteCommand).
    acknowledged = True
    target = Target.write()

    def __init__(self, context: WriteContext, document: Mapping[str, Any]) -> None:
        self.context = context
        self.statements = (document,)
        self.codec_options = context.codec_options

    def build(self, conn: ConnectionInfo) -> Command:
        context = self.context
        command: dict[str, Any] = {"insert": context.collection, "ordered": True}
        if context.write_concern_sent:
            command["writeConcern"] = context.write_concern.document
        encoded = encode(self.statements[0], codec_options=self.codec_options)
        size = len(encoded)
        if size > conn.max_bson_object_size or (
            size + FAST_PATH_ALLOWANCE > conn.max_message_size_bytes
        ):  # WriteCommand's exact computation (and its DocumentTooLarge)
            statement = WriteStatement(StatementKind.INSERT, self.statements[0])
            return _built_exactly(context, statement, conn)
        return Command(
            context.database, command, (DocumentSequence("documents", [encoded]),)
        )

    parse = staticmethod(_single_write_reply)


class WriteOne:
    """One update, replace or delete statement without command-level options, acknowledged
    (``update_one``, ``replace_one``, ``delete_one`` and their ``_many`` forms): the command
    :class:`WriteCommand` builds for it with the default options, without its batching (one
    statement always goes whole, or raises DocumentTooLarge).

    ``statements`` holds the statement (the executor's retryable-write check reads its
    ``multi``). ``parse`` raises the error of an ``ok: 0`` reply and returns the reply, whose
    write errors the caller raises.
    """

    __slots__ = ("codec_options", "context", "name", "statements")

    #: Only acknowledged writes take this path (w:0 goes by WriteCommand).
    acknowledged = True
    target = Target.write()

    def __init__(self, context: WriteContext, statement: WriteStatement) -> None:
        self.context = context
        self.name: str = statement.kind._value_  # .value is a property call (enum, 3.11)
        self.statements = (statement,)
        self.codec_options = context.codec_options

    def build(self, conn: ConnectionInfo) -> Command:
        context = self.context
        name = self.name
        command: dict[str, Any] = {name: context.collection, "ordered": True}
        if context.write_concern_sent:
            command["writeConcern"] = context.write_concern.document
        encoded = encode(self.statements[0].document, codec_options=self.codec_options)
        size = len(encoded)
        if size > conn.max_bson_object_size + COMMAND_OVERHEAD or (
            size + FAST_PATH_ALLOWANCE > conn.max_message_size_bytes
        ):  # WriteCommand's exact computation (and its DocumentTooLarge)
            return _built_exactly(context, self.statements[0], conn)
        return Command(context.database, command, (DocumentSequence(_SEQUENCES[name], [encoded]),))

    parse = staticmethod(_single_write_reply)
