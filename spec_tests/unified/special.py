"""Special Test Operations (``object: testRunner``).

failPoint / targetedFailPoint (remembered so the runner turns them off after the test),
session assertions, collection and index existence (through the runner's internal client),
createEntities, threads, waitForEvent / assertEventCount, connection counting, topology
records, wait. ``loop`` is an optional, workload-executor-only operation and is skipped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.address import format_address
from spec_tests.unified.entities import ClientEntity, EntityMap, ThreadEntity
from spec_tests.unified.errors import ApiMissing, TestFormatError, UnknownOperation, Unsupported
from spec_tests.unified.events import event_name
from spec_tests.unified.matcher import MatchError
from spec_tests.unified.target import Target, run_command, uri_for_host

__all__ = ["SPECIAL_OPERATIONS", "SpecialContext"]


class SpecialContext(Protocol):
    """What the special operations need from the runner."""

    entities: EntityMap
    internal: AsyncMongoClient

    target: Target

    def remember_fail_point(self, client: AsyncMongoClient, name: str, *,
                            owned: bool = False) -> None:
        """Turn this fail point off on this client after the test (and close the client
        if the runner made it for the fail point)."""
        ...

    async def run_operation(self, operation: Mapping[str, Any]) -> None:
        """Run one operation (runOnThread)."""
        ...


Special = Callable[[SpecialContext, Mapping[str, Any]], Awaitable[None]]


async def _fail_point(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    entity: ClientEntity = ctx.entities.get(args["client"], "client")
    fail_point = args["failPoint"]
    await run_command(entity.client, "admin", fail_point)
    ctx.remember_fail_point(entity.client, fail_point["configureFailPoint"])


async def _targeted_fail_point(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    """Set the fail point on the mongos the session is pinned to, through a direct client
    of the runner's own (turned off and closed after the test)."""
    session = ctx.entities.get(args["session"], "session")
    address = _session_attr(session, "_pinned_address")
    if address is None:
        raise MatchError("targetedFailPoint: the session is not pinned to a mongos")
    client = AsyncMongoClient(uri_for_host(ctx.target.uri, format_address(address)))
    ctx.remember_fail_point(client, args["failPoint"]["configureFailPoint"], owned=True)
    await run_command(client, "admin", args["failPoint"])


def _session_attr(session: Any, name: str) -> Any:
    if not hasattr(session, name):
        raise ApiMissing(f"{type(session).__name__}.{name}")
    return getattr(session, name)


async def _transaction_state(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    session = ctx.entities.get(args["session"], "session")
    state = _session_attr(session, "_transaction_state")
    actual = getattr(state, "value", state)
    if actual != args["state"]:
        raise MatchError(f"session transaction state is {actual!r}, not {args['state']!r}")


async def _pinned(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    if _session_attr(ctx.entities.get(args["session"], "session"), "_pinned_address") is None:
        raise MatchError("session is not pinned")


async def _unpinned(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    address = _session_attr(ctx.entities.get(args["session"], "session"), "_pinned_address")
    if address is not None:
        raise MatchError(f"session is pinned to {address}")


def _last_two_lsids(ctx: SpecialContext, args: Mapping[str, Any]) -> tuple[Any, Any]:
    entity: ClientEntity = ctx.entities.get(args["client"], "client")
    started = [e for e in entity.observer.events if event_name(e) == "commandStartedEvent"]
    if len(started) < 2:
        raise MatchError(f"fewer than two commandStartedEvents observed ({len(started)})")
    return started[-2].command.get("lsid"), started[-1].command.get("lsid")


async def _different_lsid(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    first, second = _last_two_lsids(ctx, args)
    if first == second:
        raise MatchError(f"the last two commands used the same lsid {first!r}")


async def _same_lsid(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    first, second = _last_two_lsids(ctx, args)
    if first != second:
        raise MatchError(f"the last two commands used different lsids {first!r}, {second!r}")


async def _dirty(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    if not _session_attr(ctx.entities.get(args["session"], "session"), "_dirty"):
        raise MatchError("session is not dirty")


async def _not_dirty(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    if _session_attr(ctx.entities.get(args["session"], "session"), "_dirty"):
        raise MatchError("session is dirty")


async def _collection_names(ctx: SpecialContext, database: str) -> list[str]:
    reply = await run_command(ctx.internal, database,
                              {"listCollections": 1, "nameOnly": True})
    return [c["name"] for c in reply["cursor"]["firstBatch"]]


async def _collection_exists(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    names = await _collection_names(ctx, args["databaseName"])
    if args["collectionName"] not in names:
        raise MatchError(f"collection {args['collectionName']} does not exist: {names}")


async def _collection_not_exists(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    names = await _collection_names(ctx, args["databaseName"])
    if args["collectionName"] in names:
        raise MatchError(f"collection {args['collectionName']} exists")


async def _index_names(ctx: SpecialContext, args: Mapping[str, Any]) -> list[str]:
    reply = await run_command(ctx.internal, args["databaseName"],
                              {"listIndexes": args["collectionName"]})
    return [i["name"] for i in reply["cursor"]["firstBatch"]]


async def _index_exists(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    names = await _index_names(ctx, args)
    if args["indexName"] not in names:
        raise MatchError(f"index {args['indexName']} does not exist: {names}")


async def _index_not_exists(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    from asyncmongo.errors import OperationFailure

    try:
        names = await _index_names(ctx, args)
    except OperationFailure as exc:
        if exc.code == 26:  # NamespaceNotFound: no collection, so no index
            return
        raise
    if args["indexName"] in names:
        raise MatchError(f"index {args['indexName']} exists")


async def _create_entities(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    for spec in args["entities"]:
        await ctx.entities.create(spec)


async def _connections_checked_out(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    entity: ClientEntity = ctx.entities.get(args["client"], "client")
    if entity.observer.checked_out != args["connections"]:
        raise MatchError(f"{entity.observer.checked_out} connections checked out, "
                         f"expected {args['connections']}")


async def _run_on_thread(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    thread: ThreadEntity = ctx.entities.get(args["thread"], "thread")
    operation = args["operation"]
    thread.submit(lambda: ctx.run_operation(operation))


async def _wait_for_thread(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    thread: ThreadEntity = ctx.entities.get(args["thread"], "thread")
    await thread.wait()


async def _wait_for_event(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    entity: ClientEntity = ctx.entities.get(args["client"], "client")
    await entity.observer.wait_for(args["event"], args["count"], ctx.entities)


async def _event_count(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    entity: ClientEntity = ctx.entities.get(args["client"], "client")
    count = entity.observer.count(args["event"], ctx.entities)
    if count != args["count"]:
        raise MatchError(f"observed {count} events {dict(args['event'])!r}, "
                         f"expected {args['count']}")


async def _record_topology(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    entity: ClientEntity = ctx.entities.get(args["client"], "client")
    ctx.entities.add(args["id"], "topologyDescription", entity.client.topology_description)


async def _topology_type(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    description = ctx.entities.get(args["topologyDescription"], "topologyDescription")
    actual = description.topology_type.value
    if actual != args["topologyType"]:
        raise MatchError(f"topology type is {actual}, expected {args['topologyType']}")


async def _wait_for_primary_change(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    entity: ClientEntity = ctx.entities.get(args["client"], "client")
    prior = ctx.entities.get(args["priorTopologyDescription"], "topologyDescription")
    timeout = args.get("timeoutMS", 10_000) / 1000

    def primary(description: Any) -> Any:
        for address, server in description.servers.items():
            if server.server_type.value == "RSPrimary":
                return address
        return None

    before = primary(prior)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        now = primary(entity.client.topology_description)
        if now is not None and now != before:
            return
        await asyncio.sleep(0.01)
    raise MatchError(f"the primary did not change from {before} within {timeout}s")


async def _wait(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    await asyncio.sleep(args["ms"] / 1000)


async def _loop(ctx: SpecialContext, args: Mapping[str, Any]) -> None:
    raise Unsupported("loop is only for the Atlas workload executor (optional in the spec)")


SPECIAL_OPERATIONS: dict[str, Special] = {
    "failPoint": _fail_point,
    "targetedFailPoint": _targeted_fail_point,
    "assertSessionTransactionState": _transaction_state,
    "assertSessionPinned": _pinned,
    "assertSessionUnpinned": _unpinned,
    "assertDifferentLsidOnLastTwoCommands": _different_lsid,
    "assertSameLsidOnLastTwoCommands": _same_lsid,
    "assertSessionDirty": _dirty,
    "assertSessionNotDirty": _not_dirty,
    "assertCollectionExists": _collection_exists,
    "assertCollectionNotExists": _collection_not_exists,
    "assertIndexExists": _index_exists,
    "assertIndexNotExists": _index_not_exists,
    "createEntities": _create_entities,
    "assertNumberConnectionsCheckedOut": _connections_checked_out,
    "runOnThread": _run_on_thread,
    "waitForThread": _wait_for_thread,
    "waitForEvent": _wait_for_event,
    "assertEventCount": _event_count,
    "recordTopologyDescription": _record_topology,
    "assertTopologyType": _topology_type,
    "waitForPrimaryChange": _wait_for_primary_change,
    "wait": _wait,
    "loop": _loop,
}


def find_special(name: str) -> Special:
    """The testRunner operation ``name`` (UnknownOperation if the format has none)."""
    special = SPECIAL_OPERATIONS.get(name)
    if special is None:
        raise UnknownOperation(f"testRunner has no operation {name!r}")
    return special


__all__ += ["TestFormatError", "find_special"]
