"""``client.bulk_write``: the ``bulkWrite`` command across namespaces (MongoDB 8.0+,
specs/crud/bulk-write.md).

:class:`ClientBulkWrite` sends the models still to send (from ``start``) as one batch that
fits the connection's limits, with ``ops`` and ``nsInfo`` as document sequences on admin;
:class:`ClientBulkResult` merges the summary counts and the results cursor's entries of
every batch, rebasing each ``idx`` to the model's index in the user's list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.bson.codec import encode
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.core.address import Address
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.base import Command, ConnectionInfo, Target, with_raw_data
from asyncmongo.core.operations.common import Namespace, put
from asyncmongo.core.operations.cursors import CursorPage, parse_cursor_page
from asyncmongo.core.operations.replies import check_reply
from asyncmongo.core.operations.statements import StatementKind, WriteStatement
from asyncmongo.core.wire.op_msg import DocumentSequence
from asyncmongo.errors import DocumentTooLarge, InvalidArgument, InvalidOperation

__all__ = [
    "BULK_WRITE_WIRE_VERSION",
    "ClientBatchReply",
    "ClientBulkOptions",
    "ClientBulkResult",
    "ClientBulkWrite",
    "ops_document",
]

#: MongoDB 8.0 introduced the bulkWrite command.
BULK_WRITE_WIRE_VERSION = 25
#: bulk-write spec: room left in maxMessageSizeBytes for the header and generic fields.
MESSAGE_OVERHEAD_BYTES = 1000


def ops_document(statement: WriteStatement, ns_index: int) -> dict[str, Any]:
    """A write statement as a bulkWrite ``ops`` entry for namespace ``ns_index``."""
    source = statement.document
    if statement.kind is StatementKind.INSERT:
        return {"insert": ns_index, "document": source}
    if statement.kind is StatementKind.DELETE:
        document = {"delete": ns_index, "filter": source["q"], "multi": source["limit"] == 0}
        for key in ("hint", "collation"):
            put(document, key, source.get(key))
        return document
    document = {
        "update": ns_index,
        "filter": source["q"],
        "updateMods": source["u"],
        "multi": bool(source.get("multi", False)),
    }
    for key in ("upsert", "arrayFilters", "hint", "collation", "sort"):
        put(document, key, source.get(key))
    return document


@dataclass(frozen=True, slots=True)
class ClientBulkOptions:
    """The command-level options (verbose results = not ``errorsOnly``)."""

    ordered: bool = True
    verbose_results: bool = False
    bypass_document_validation: bool | None = None
    comment: Any = None
    let: Mapping[str, Any] | None = None
    raw_data: bool | None = None

    def check(self, write_concern: WriteConcern) -> None:
        """The spec's client-side refusals for w:0."""
        if not write_concern.acknowledged:
            if self.ordered:
                raise InvalidArgument(
                    "Cannot request unacknowledged write concern and ordered writes"
                )
            if self.verbose_results:
                raise InvalidArgument(
                    "Cannot request unacknowledged write concern and verbose results"
                )


@dataclass(frozen=True, slots=True)
class ClientBatchReply:
    """One batch's reply: its statements ``start`` .. ``start+count`` and the first page."""

    reply: Mapping[str, Any]
    start: int
    count: int
    page: CursorPage | None

    def with_address(self, address: Address | None) -> ClientBatchReply:
        """This reply with its results cursor naming the server that owns it."""
        page = self.page
        if page is None or not page.cursor_id or page.address is not None:
            return self
        return ClientBatchReply(self.reply, self.start, self.count, page.with_address(address))


class ClientBulkWrite:
    """One ``bulkWrite`` command for the models from ``start`` on (as many as fit)."""

    __slots__ = (
        "_batch",
        "_ops",
        "codec_options",
        "models",
        "options",
        "start",
        "target",
        "write_concern",
    )

    name = "bulkWrite"

    def __init__(
        self,
        models: Sequence[tuple[str, WriteStatement]],
        options: ClientBulkOptions,
        write_concern: WriteConcern,
        codec_options: CodecOptions,
        *,
        start: int = 0,
        ops: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        if not models:
            raise InvalidArgument("client.bulk_write needs at least one write model")
        options.check(write_concern)
        self.models = models
        self.options = options
        self.write_concern = write_concern
        self.codec_options = codec_options
        self.start = start
        self.target = Target.write()
        self._ops = ops
        self._batch = 0

    def command_document(self) -> dict[str, Any]:
        o = self.options
        command: dict[str, Any] = {
            "bulkWrite": 1,
            "errorsOnly": not o.verbose_results,
            "ordered": o.ordered,
        }
        put(command, "bypassDocumentValidation", o.bypass_document_validation)
        put(command, "comment", o.comment)
        put(command, "let", o.let)
        if not self.write_concern.is_server_default:
            command["writeConcern"] = self.write_concern.document
        return command

    def build(self, conn: ConnectionInfo) -> Command:
        if conn.max_wire_version < BULK_WRITE_WIRE_VERSION:
            raise InvalidOperation("client.bulk_write needs MongoDB 8.0 or newer")
        command = with_raw_data(self.command_document(), self.options.raw_data, conn)
        room = conn.max_message_size_bytes - MESSAGE_OVERHEAD_BYTES - len(encode(command))
        ops: list[bytes] = []
        ns_docs: list[bytes] = []
        ns_index: dict[str, int] = {}
        used = 0
        for namespace, statement in self.models[self.start :]:
            if len(ops) >= conn.max_write_batch_size:
                break
            new_ns = namespace not in ns_index
            index = ns_index.get(namespace, len(ns_index))
            op = encode(ops_document(statement, index), codec_options=self.codec_options)
            ns_doc = encode({"ns": namespace}) if new_ns else b""
            if len(op) > conn.max_bson_object_size + 16 * 1024:
                raise DocumentTooLarge(
                    f"bulk write operation {self.start + len(ops)} is {len(op)} bytes"
                )
            if used + len(op) + len(ns_doc) > room:
                break
            if new_ns:
                ns_index[namespace] = index
                ns_docs.append(ns_doc)
            ops.append(op)
            used += len(op) + len(ns_doc)
        if not ops:
            raise DocumentTooLarge("no room for even one operation in a bulkWrite message")
        self._batch = len(ops)
        return Command(
            "admin",
            command,
            (DocumentSequence("ops", ops), DocumentSequence("nsInfo", ns_docs)),
            unacknowledged=not self.write_concern.acknowledged,
        )

    def parse(self, reply: Mapping[str, Any]) -> ClientBatchReply:
        if not self.write_concern.acknowledged:
            return ClientBatchReply(reply, self.start, self._batch, None)
        check_reply(reply)
        page = parse_cursor_page(reply, Namespace("admin", "$cmd.bulkWrite"))
        return ClientBatchReply(reply, self.start, self._batch, page)

    def rest(self, sent: int) -> ClientBulkWrite | None:
        start = self.start + sent
        if start >= len(self.models):
            return None
        return ClientBulkWrite(
            self.models, self.options, self.write_concern, self.codec_options, start=start
        )


@dataclass(slots=True)
class ClientBulkResult:
    """Totals, per-model results (verbose) and errors of a client bulk write."""

    models: Sequence[tuple[str, WriteStatement]]
    #: Whether the server stops at the first error (decides what a failed op says about the
    #: ones before it, for the partial result).
    ordered: bool = True
    n_inserted: int = 0
    n_upserted: int = 0
    n_matched: int = 0
    n_modified: int = 0
    n_deleted: int = 0
    insert_results: dict[int, Any] = field(default_factory=dict)
    update_results: dict[int, dict[str, Any]] = field(default_factory=dict)
    delete_results: dict[int, dict[str, Any]] = field(default_factory=dict)
    write_errors: dict[int, dict[str, Any]] = field(default_factory=dict)
    write_concern_errors: list[dict[str, Any]] = field(default_factory=list)
    any_success: bool = False

    def add_summary(self, batch: ClientBatchReply) -> None:
        reply = batch.reply
        self.n_inserted += int(reply.get("nInserted", 0))
        self.n_upserted += int(reply.get("nUpserted", 0))
        self.n_matched += int(reply.get("nMatched", 0))
        self.n_modified += int(reply.get("nModified", 0))
        self.n_deleted += int(reply.get("nDeleted", 0))
        errors = int(reply.get("nErrors", 0))
        # Unordered: every op ran, so fewer errors than ops means a write happened. Ordered:
        # only a batch without errors says so here; a failed op at idx > 0 says it too
        # (add_results), as the ops before it ran.
        if batch.count and (errors == 0 or (not self.ordered and errors < batch.count)):
            self.any_success = True
        concern_error = reply.get("writeConcernError")
        if isinstance(concern_error, Mapping):
            self.write_concern_errors.append(dict(concern_error))

    def add_results(self, batch: ClientBatchReply, entries: Sequence[Mapping[str, Any]]) -> bool:
        """Record cursor entries; True if an ordered bulk must stop (a write error)."""
        stop = False
        for entry in entries:
            index = batch.start + int(entry["idx"])
            if entry.get("ok") not in (1, 1.0, True):
                self.write_errors[index] = dict(entry)
                stop = True
                if self.ordered and index > 0:
                    self.any_success = True
                continue
            self.any_success = True
            _, statement = self.models[index]
            if statement.kind is StatementKind.INSERT:
                self.insert_results[index] = statement.document.get("_id")
            elif statement.kind is StatementKind.UPDATE:
                raw = {"n": entry.get("n", 0), "nModified": entry.get("nModified", 0)}
                if "upserted" in entry:
                    raw["upserted"] = entry["upserted"]
                self.update_results[index] = raw
            else:
                self.delete_results[index] = {"n": entry.get("n", 0)}
        return stop

    def document(self) -> dict[str, Any]:
        return {
            "nInserted": self.n_inserted,
            "nUpserted": self.n_upserted,
            "nMatched": self.n_matched,
            "nModified": self.n_modified,
            "nDeleted": self.n_deleted,
        }
