"""Running writes in batches: single writes, collection bulk writes, client bulk writes.

The operations (``asyncmongo.core.operations.write``/``bulk``/``client_bulk``) say how one
batch is built and parsed; the loops here send batch after batch through the client until
every statement went, merge the replies, and raise the combined error, all batches of one
call sharing one operation id (command monitoring: "Bulk Writes").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from asyncmongo._adopt import adopt_write_model
from asyncmongo._scope import new_id_class
from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.errors import BSONError
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.concern import WriteConcern
from asyncmongo.core.operations.base import Operation
from asyncmongo.core.operations.bulk import BulkResult, plan_runs
from asyncmongo.core.operations.client_bulk import (
    ClientBatchReply,
    ClientBulkOptions,
    ClientBulkResult,
    ClientBulkWrite,
)
from asyncmongo.core.operations.common import Namespace
from asyncmongo.core.operations.cursors import GetMore
from asyncmongo.core.operations.statements import WriteStatement
from asyncmongo.core.operations.write import WriteCommand, WriteOptions
from asyncmongo.errors import ClientBulkWriteException, InvalidArgument, MongoError
from asyncmongo.operations import WriteModel
from asyncmongo.results import (
    BulkWriteResult,
    ClientBulkWriteResult,
    DeleteResult,
    InsertOneResult,
    UpdateResult,
)

__all__ = ["Runner", "run_bulk", "run_client_bulk", "run_writes"]

T = TypeVar("T")


class Runner(Protocol):
    """What the loops need of the client."""

    def _next_operation_id(self) -> int: ...

    def _run(
        self,
        op: Operation[T],
        session: Any = None,
        operation_id: int | None = None,
        *,
        deadline: float | None = None,
        max_time: bool = True,
    ) -> Awaitable[T]: ...


async def run_writes(
    runner: Runner,
    namespace: Namespace,
    statements: Sequence[WriteStatement],
    write_concern: WriteConcern,
    codec_options: CodecOptions,
    options: WriteOptions,
    session: Any = None,
    deadline: float | None = None,
) -> list[Mapping[str, Any]]:
    """Statements of one kind in as many batches as the server's limits need; the replies."""
    command: WriteCommand | None = WriteCommand(
        namespace, statements[0].kind, statements, write_concern, codec_options, options
    )
    operation_id = runner._next_operation_id()
    replies: list[Mapping[str, Any]] = []
    while command is not None:
        batch = await runner._run(command, session, operation_id, deadline=deadline)
        replies.append(batch.reply)
        command = command.rest(batch.count)
    return replies


async def run_bulk(
    runner: Runner,
    namespace: Namespace,
    statements: Sequence[WriteStatement],
    write_concern: WriteConcern,
    codec_options: CodecOptions,
    options: WriteOptions,
    session: Any = None,
    deadline: float | None = None,
) -> BulkResult:
    """A collection bulk write (runs of one kind, in batches); BulkWriteError on failure.

    Every MongoError or BSONError raised out of it (BulkWriteError, the retry's network
    error, a timeout, a document too large for a later batch) carries ``partial_result``:
    the BulkWriteResult of the batches acknowledged before it (None when unacknowledged), so
    the caller knows what was already applied (CRUD spec).
    """
    acknowledged = write_concern.acknowledged
    result = BulkResult()
    operation_id = runner._next_operation_id()
    try:
        for run in plan_runs(statements, options.ordered):
            command: WriteCommand | None = WriteCommand(
                namespace, run.kind, run.statements, write_concern, codec_options, options
            )
            while command is not None:
                batch = await runner._run(command, session, operation_id, deadline=deadline)
                if acknowledged:
                    result.add(run, batch)
                    if options.ordered and result.has_write_errors:
                        result.raise_if_failed()
                command = command.rest(batch.count)
        if acknowledged:
            result.raise_if_failed()
    except (MongoError, BSONError) as exc:
        exc.partial_result = (
            BulkWriteResult(result.document(), True) if acknowledged else None
        )
        raise
    return result


def namespaced(
    models: Iterable[WriteModel], new_id: Callable[[], Any] = ObjectId
) -> list[tuple[str, WriteStatement]]:
    """(namespace, statement) of every model; client.bulk_write needs a namespace on each."""
    statements = []
    for model in models:
        model = adopt_write_model(model)
        if not isinstance(model, WriteModel):
            raise InvalidArgument(f"{model!r} is not a write model")
        namespace = model.namespace
        if not isinstance(namespace, str) or "." not in namespace.strip("."):
            raise InvalidArgument(
                "client.bulk_write needs a namespace ('db.collection') on every write model"
            )
        statements.append((namespace, model._statement(new_id)))
    return statements


async def run_client_bulk(
    runner: Runner,
    models: Iterable[WriteModel],
    options: ClientBulkOptions,
    write_concern: WriteConcern,
    codec_options: CodecOptions,
    session: Any = None,
    deadline: float | None = None,
) -> ClientBulkWriteResult:
    """client.bulk_write: bulkWrite batches, each results cursor drained; errors collected
    into ClientBulkWriteException (a top-level error alone is raised as it is)."""
    statements = namespaced(models, new_id_class(codec_options))
    command: ClientBulkWrite | None = ClientBulkWrite(
        statements, options, write_concern, codec_options
    )
    result = ClientBulkResult(statements, ordered=options.ordered)
    operation_id = runner._next_operation_id()
    try:
        while command is not None:
            batch = await _client_batch(
                runner, command, result, codec_options, operation_id, session, deadline
            )
            if options.ordered and result.write_errors:
                break
            command = command.rest(batch.count)
    except MongoError as exc:
        if result.any_success or result.write_errors or result.write_concern_errors:
            raise _client_bulk_error(result, options.verbose_results, exc) from exc
        raise
    if result.write_errors or result.write_concern_errors:
        raise _client_bulk_error(result, options.verbose_results, None)
    if not write_concern.acknowledged:
        return ClientBulkWriteResult({}, False, False)
    return _client_bulk_result(result, options.verbose_results)


async def _client_batch(
    runner: Runner,
    command: ClientBulkWrite,
    result: ClientBulkResult,
    codec_options: CodecOptions,
    operation_id: int,
    session: Any,
    deadline: float | None,
) -> ClientBatchReply:
    """One bulkWrite command and its whole results cursor (the spec: always drained)."""
    batch = await runner._run(command, session, operation_id, deadline=deadline)
    page = batch.page
    if page is None:  # unacknowledged
        return batch
    result.add_summary(batch)
    result.add_results(batch, page.documents)
    cursor_id = page.cursor_id
    while cursor_id:
        assert page.address is not None
        get_more = GetMore(cursor_id, page.namespace, page.address, codec_options)
        page = await runner._run(
            get_more, session, operation_id, deadline=deadline, max_time=False
        )
        result.add_results(batch, page.documents)
        cursor_id = page.cursor_id
    return batch


def _client_bulk_result(result: ClientBulkResult, verbose: bool) -> ClientBulkWriteResult:
    document: dict[str, Any] = result.document()
    if verbose:
        document["insertResults"] = {
            i: InsertOneResult(inserted_id, True)
            for i, inserted_id in result.insert_results.items()
        }
        document["updateResults"] = {
            i: UpdateResult(raw, True, in_client_bulk=True)
            for i, raw in result.update_results.items()
        }
        document["deleteResults"] = {
            i: DeleteResult(raw, True) for i, raw in result.delete_results.items()
        }
    return ClientBulkWriteResult(document, True, verbose)


def _client_bulk_error(
    result: ClientBulkResult, verbose: bool, error: BaseException | None
) -> ClientBulkWriteException:
    partial = _client_bulk_result(result, verbose) if result.any_success else None
    return ClientBulkWriteException(
        "bulk write errors occurred" if error is None else f"bulk write stopped: {error}",
        error=error,
        write_errors=result.write_errors,
        write_concern_errors=result.write_concern_errors,
        partial_result=partial,
    )
