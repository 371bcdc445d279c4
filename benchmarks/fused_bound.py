"""How much of asyncmongo's cost over the floor is its layering: find_one fused into one
coroutine from the same runtime pieces, paired against asyncmongo and the floor.

``fused`` uses what asyncmongo's own find_one uses on its usual path: the topology's
remembered route, the pool's fast check-out and check-in, a server session from the
client's pool (the implicit session's lsid), the cluster time's gossip both ways, the
connection's framing and its fast reply path, the BSON codec. What it leaves out is the
layering between them: no operation object, no ``SessionOperation``, no ``ImplicitSession``,
no executor or ``Connection.command`` frame, and none of the checks those make for the
cases find_one does not meet. ``flat`` adds those checks back (explicit session, cursor
command, deadline, lease, command events, encryption, the connection's state, server API,
socket timeout, reauthentication, write concern error, a cursor left open), each asked
inline as one flat path would ask it; an unusual answer raises NotImplementedError. So
``fused`` bounds what the pieces cost, ``flat`` what one path with every question costs,
and asyncmongo's ratio over ``flat``'s is what the layers themselves cost. Both start
below the API: find_one's argument handling, the operation object and ``client._run`` are
not in them; ``executor`` is asyncmongo's own path from there (``Executor.run`` of the
``FindOne`` that ``find_one`` builds), so asyncmongo's ratio over it is what the API costs.
``nested`` is ``flat`` three coroutines deeper, each passing keyword arguments
on (as find_one, the executor's run and attempt and ``Connection.command`` nest): what the
frames alone cost. ``lean`` keeps the operation object and ``Connection.command`` and makes
the executor one coroutine with the attempt in locals: ``executor`` over ``lean`` bounds what
restructuring the executor alone can save.

``--op insert_one`` measures the same bound for insert_one: ``fused`` from the pieces
alone (the ``_id``, a retryable write's lsid and txnNumber, the cluster time, the write
errors checked), beside asyncmongo's own.

They reach into the runtime's private attributes, so they are measurements, not an API:
each find_one checks that it returns what ``find_one`` returns before anything is timed.

    PYTHONPATH=. python benchmarks/fused_bound.py [--op find_one|insert_one]
        [--loop asyncio|uvloop] [--pairs 20] [--batch 300]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import ReplayServer, load_data, paired_cpu, paired_ratios
from floor_client import FloorClient

import asyncmongo
from asyncmongo.bson import ObjectId, codec
from asyncmongo.core.operations.base import Target
from asyncmongo.core.operations.find import FindOne
from asyncmongo.core.operations.replies import is_ok
from asyncmongo.core.sdam.types import TopologyType
from asyncmongo.core.sessions.decorate import decorate_plain
from asyncmongo.runtime import connection as wire

_CURSOR_COMMANDS = frozenset({"getMore", "killCursors"})


def _pieces(
    client: asyncmongo.AsyncMongoClient[dict[str, Any]], collection: Any
) -> tuple[Any, Any]:
    """(the client's executor, the collection's find_one context): what both paths start
    from."""
    runtime = client._runtime
    assert runtime is not None, "connect the client first"
    context = collection._find_context
    assert context is not None, "run one find_one on the collection first"
    return runtime.executor, context


def _send(conn: Any, document: dict[str, Any], codec_options: Any,
          loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
    """Write ``document`` as one OP_MSG on ``conn`` by its fast path; the future its reply
    (the message body) resolves."""
    body = codec._encode(document, False, codec_options)
    request_id = next(wire._request_ids)
    protocol = conn._protocol
    protocol.reader.expected_response_to = request_id
    conn._busy = True
    conn._transport.write(wire._pack_plain_prefix(
        len(body) + wire._REQUEST_PREFIX_SIZE, request_id, wire._PLAIN_PREFIX_TAIL
    ) + body)
    waiter: asyncio.Future[Any] = loop.create_future()
    protocol._reply_waiter = waiter
    return waiter


def _received(conn: Any) -> None:
    """``conn`` awaits no reply any more."""
    conn._protocol._reply_waiter = None
    conn._busy = False


def fused_find_one(
    client: asyncmongo.AsyncMongoClient[dict[str, Any]], collection: Any
) -> Callable[[Mapping[str, Any]], Awaitable[dict[str, Any] | None]]:
    """find_one(filter) on ``collection`` (of ``client``, which has run a find_one on it)
    as one coroutine: see the module's docstring."""
    executor, context = _pieces(client, collection)
    topology, clock = executor._topology, executor.clock
    sessions = client._server_sessions
    selection = context.target.selection
    codec_options = context.codec_options
    database, name = context.database, context.collection
    monotonic = time.monotonic
    loop = asyncio.get_running_loop()

    async def find_one(filter: Mapping[str, Any]) -> dict[str, Any] | None:
        route = topology.route(selection)
        assert route is not None, "the route is remembered after the first find_one"
        pool = route[0].pool
        conn = pool.try_check_out() or await pool.check_out(None)
        description = topology.description
        now = monotonic()
        server_session = sessions.pool.acquire(now, description)
        server_session.last_use = now
        document: dict[str, Any] = {
            "find": name, "filter": filter, "limit": 1, "singleBatch": True,
            "lsid": server_session.lsid, "$db": database,
        }
        if clock.cluster_time is not None:
            document["$clusterTime"] = clock.cluster_time
        try:
            waiter = _send(conn, document, codec_options, loop)
            try:
                result = await waiter
            finally:
                _received(conn)
            reply: dict[str, Any] = codec._decode(result, codec_options)
            if reply.get("ok") != 1:
                raise RuntimeError(f"find failed: {reply}")
            clock.advance(reply)
        except BaseException:
            conn.close()
            raise
        pool.check_in(conn)
        sessions.pool.release(server_session, monotonic(), description)
        batch: list[dict[str, Any]] = reply["cursor"]["firstBatch"]
        return batch[0] if batch else None

    return find_one


def fused_insert_one(
    client: asyncmongo.AsyncMongoClient[dict[str, Any]], collection: Any
) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """insert_one(document) on ``collection`` (of ``client``, which has run an insert_one
    on it) from the pieces alone, as ``fused_find_one`` is find_one's: the ``_id`` added,
    a retryable write's lsid and txnNumber, the cluster time's gossip both ways, the write
    errors checked. The document goes in the command's body, as the floor sends it."""
    runtime = client._runtime
    assert runtime is not None, "connect the client first"
    executor = runtime.executor
    topology, clock = executor._topology, executor.clock
    sessions = client._server_sessions
    selection = Target.write().selection
    codec_options = collection.codec_options
    database, name = collection.database.name, collection.name
    monotonic = time.monotonic
    loop = asyncio.get_running_loop()

    async def insert_one(document: dict[str, Any]) -> Any:
        if "_id" not in document:
            document["_id"] = ObjectId()
        route = topology.route(selection)
        assert route is not None, "the route is remembered after the first insert_one"
        pool = route[0].pool
        conn = pool.try_check_out() or await pool.check_out(None)
        description = topology.description
        now = monotonic()
        server_session = sessions.pool.acquire(now, description)
        server_session.last_use = now
        command: dict[str, Any] = {
            "insert": name, "ordered": True, "lsid": server_session.lsid,
            "txnNumber": server_session.next_txn_number(), "$db": database,
            "documents": [document],
        }
        if clock.cluster_time is not None:
            command["$clusterTime"] = clock.cluster_time
        try:
            waiter = _send(conn, command, codec_options, loop)
            try:
                result = await waiter
            finally:
                _received(conn)
            reply: dict[str, Any] = codec._decode(result, codec_options)
            if reply.get("ok") != 1 or "writeErrors" in reply:
                raise RuntimeError(f"insert failed: {reply}")
            clock.advance(reply)
        except BaseException:
            conn.close()
            raise
        pool.check_in(conn)
        sessions.pool.release(server_session, monotonic(), description)
        return document["_id"]

    return insert_one


def flat_find_one(
    client: asyncmongo.AsyncMongoClient[dict[str, Any]], collection: Any
) -> Callable[[Mapping[str, Any]], Awaitable[dict[str, Any] | None]]:
    """``fused_find_one`` plus every check asyncmongo's layered path makes on the way of the
    usual find_one (explicit session? cursor command? deadline? deprioritized servers?
    transaction or load-balanced lease? command events? encryption? timeoutMS? a connection
    busy, draining, paused or with a socket timeout? reauthentication? a write concern
    error? a cursor left open?), each asked as the layered path asks it but inline, as one
    flat path would. Any answer other than the usual one raises NotImplementedError: this
    measures what the questions cost, not the other paths."""
    executor, context = _pieces(client, collection)
    topology, clock, events = executor._topology, executor.clock, executor.events
    sessions = client._server_sessions
    target = context.target
    codec_options = context.codec_options
    database, name = context.database, context.collection
    monotonic = time.monotonic
    loop = asyncio.get_running_loop()

    def unusual(what: str) -> NotImplementedError:
        return NotImplementedError(f"flat_find_one measures the usual path only: {what}")

    async def find_one(
        filter: Mapping[str, Any], session: Any = None, timeout_ms: int | None = None
    ) -> dict[str, Any] | None:
        if session is not None or client._closed or client._tracing is not None:
            raise unusual("session, closed client or tracing")
        if client._loop is not loop or timeout_ms is not None or client._options.timeout_ms:
            raise unusual("another loop or timeoutMS")
        if "find" in _CURSOR_COMMANDS or executor.encrypt_command is not None:
            raise unusual("getMore/killCursors or encryption")
        deprioritized: list[Any] = []
        retries = 0
        route = (
            topology.route(target.selection)
            if not deprioritized and target.address is None and not target.write_stage
            else None
        )
        if route is None:
            raise unusual("selection")
        server, topology_type, read_preference = route
        server.operation_count += 1
        server_session = None
        try:
            if topology_type is TopologyType.LOAD_BALANCED:
                raise unusual("load balanced")
            pool = server.pool
            conn = pool.try_check_out() or await pool.check_out(None)
            if "$clusterTime" in conn.hello:
                clock.advance(conn.hello)
            document: dict[str, Any] = {
                "find": name, "filter": filter if filter is not None else {}, "limit": 1,
                "singleBatch": True,
            }
            if context.read_concern is not None:
                document["readConcern"] = context.read_concern.document
            max_wire_version = conn.max_wire_version
            cluster_time = clock.cluster_time if max_wire_version >= 6 else None
            if conn.supports_sessions:
                description = topology.description
                now = monotonic()
                server_session = sessions.pool.acquire(now, description)
                server_session.last_use = now
                document["lsid"] = server_session.lsid
            if cluster_time is not None:
                document["$clusterTime"] = cluster_time
            if read_preference is not None:
                document["$readPreference"] = read_preference
            if events.wanted:
                raise unusual("command events")
            if conn.is_closed or conn._busy or conn._streaming:
                raise unusual("connection not usable")
            protocol = conn._protocol
            settings = conn._settings
            conn._busy = True
            try:
                if protocol._draining:
                    raise unusual("draining")
                document["$db"] = database
                if settings.server_api is not None:
                    raise unusual("server API")
                body = codec._encode(document, False, settings.codec_options)
                request_id = next(wire._request_ids)
                if len(body) > conn._plain_limit:
                    raise unusual("a large or compressed request")
                protocol.reader.expected_response_to = request_id
                conn._transport.write(wire._pack_plain_prefix(
                    len(body) + wire._REQUEST_PREFIX_SIZE, request_id, wire._PLAIN_PREFIX_TAIL
                ) + body)
                if (
                    protocol._paused is not None
                    or protocol._replies
                    or protocol._lost is not None
                    or settings.socket_timeout is not None
                ):
                    raise unusual("paused, queued, lost or socket timeout")
                waiter = protocol._reply_waiter = loop.create_future()
                try:
                    result = await waiter
                except asyncio.CancelledError:
                    conn._abandon_read()
                    raise
                finally:
                    protocol._reply_waiter = None
                if result is None:
                    raise unusual("a reply off the fast path")
                reply: dict[str, Any] = codec._decode(result, codec_options)
            finally:
                conn._busy = False
            if reply.get("ok") != 1:
                if reply.get("code") == 391 and conn.authenticator is not None:
                    raise unusual("reauthentication")
                raise RuntimeError(f"find failed: {reply}")
            if "writeConcernError" in reply:
                raise unusual("write concern error")
            pool.check_in(conn)
            clock.advance(reply)
            cursor = reply.get("cursor")
            if cursor.__class__ is not dict or cursor.get("id", 0):
                raise unusual("a cursor left open")
            batch: list[dict[str, Any]] = cursor["firstBatch"]
        except BaseException:
            retries += 1  # where the retry rules would be asked
            raise
        finally:
            server.operation_count -= 1
            if server_session is not None:
                sessions.pool.release(server_session, monotonic(), description)
        return batch[0] if batch else None

    return find_one


def nested(
    find_one: Callable[[Mapping[str, Any]], Awaitable[dict[str, Any] | None]],
) -> Callable[[Mapping[str, Any]], Awaitable[dict[str, Any] | None]]:
    """``find_one`` under three more coroutines, each awaiting the next with keyword
    arguments, as the layered path's frames do (see the module's docstring)."""

    async def third(
        filter: Mapping[str, Any], *, session: Any = None, deadline: float | None = None,
        operation_id: int | None = None, codec_options: Any = None,
    ) -> dict[str, Any] | None:
        return await find_one(filter)

    async def second(
        filter: Mapping[str, Any], *, session: Any = None, deadline: float | None = None,
        operation_id: int | None = None, codec_options: Any = None,
    ) -> dict[str, Any] | None:
        return await third(filter, session=session, deadline=deadline,
                           operation_id=operation_id, codec_options=codec_options)

    async def first(filter: Mapping[str, Any]) -> dict[str, Any] | None:
        return await second(filter, session=None, deadline=None, operation_id=None,
                            codec_options=None)

    return first


def executor_find_one(
    client: asyncmongo.AsyncMongoClient[dict[str, Any]], collection: Any
) -> Callable[[Mapping[str, Any]], Awaitable[dict[str, Any] | None]]:
    """asyncmongo's find_one below the API: the executor runs the operation find_one builds
    (``FindOne``: a filter that is a mapping, no other option, no session)."""
    executor, context = _pieces(client, collection)

    async def find_one(filter: Mapping[str, Any]) -> dict[str, Any] | None:
        batch: list[dict[str, Any]] = await executor.run(FindOne(context, filter))
        return batch[0] if batch else None

    return find_one


def lean_find_one(
    client: asyncmongo.AsyncMongoClient[dict[str, Any]], collection: Any
) -> Callable[[Mapping[str, Any]], Awaitable[dict[str, Any] | None]]:
    """``executor`` with the executor restructured as far as it can be while every layer
    around it stays: the operation object (``FindOne``: its ``build`` and ``parse``) and
    ``Connection.command`` are asyncmongo's own, and the executor's part is one coroutine
    holding the attempt's state in locals (no ``SessionOperation``, no ``ImplicitSession``,
    no ``_execute`` frame: the server session is leased from the pool and given back in
    the ``finally``). Every question the executor asks on the usual path is asked; an
    unusual answer raises NotImplementedError. So ``executor`` over ``lean`` is the most a
    restructured executor can save."""
    executor, context = _pieces(client, collection)
    topology, clock, events = executor._topology, executor.clock, executor.events
    sessions = client._server_sessions
    monotonic = time.monotonic

    def unusual(what: str) -> NotImplementedError:
        return NotImplementedError(f"lean_find_one measures the usual path only: {what}")

    async def run(op: FindOne, deadline: float | None = None) -> Any:
        name = op.name
        if name in _CURSOR_COMMANDS or deadline is not None:
            raise unusual("getMore/killCursors or timeoutMS")
        if executor.encrypt_command is not None or executor.decrypt_reply is not None:
            raise unusual("encryption")
        target = op.target
        route = (
            topology.route(target.selection)
            if target.address is None and not target.write_stage
            else None
        )
        if route is None:
            raise unusual("selection")
        server, topology_type, read_preference = route
        if topology_type is TopologyType.LOAD_BALANCED:
            raise unusual("load balanced")
        server.operation_count += 1
        server_session = None
        try:
            pool = server.pool
            conn = pool.try_check_out() or await pool.check_out(deadline)
            if "$clusterTime" in conn.hello:
                clock.advance(conn.hello)
            command = op.build(conn)
            lsid = None
            if conn.supports_sessions:
                description = topology.description
                now = monotonic()
                server_session = sessions.pool.acquire(now, description)
                server_session.last_use = now
                lsid = server_session.lsid
            cluster_time = clock.cluster_time if conn.max_wire_version >= 6 else None
            document = decorate_plain(command.document, lsid, None, cluster_time)
            if read_preference is not None:
                document["$readPreference"] = read_preference
            if events.wanted:
                raise unusual("command events")
            try:
                reply = await conn.command(
                    command.database, document, sequences=command.sequences,
                    deadline=deadline, unacknowledged=command.unacknowledged,
                    codec_options=op.codec_options, csot=False, checked_at=None,
                )
            except BaseException:
                pool.discard(conn, None)
                raise
            if not (command.unacknowledged or is_ok(reply)) or "writeConcernError" in reply:
                raise unusual("an error reply")
            pool.check_in(conn)
            clock.advance(reply)
            result = op.parse(reply)
        finally:
            server.operation_count -= 1
            if server_session is not None:
                sessions.pool.release(server_session, monotonic(), description)
        if getattr(result, "cursor_id", None):
            raise unusual("a cursor left open")
        with_address = getattr(result, "with_address", None)
        return result if with_address is None else with_address(server.address)

    async def find_one(filter: Mapping[str, Any]) -> dict[str, Any] | None:
        batch: list[dict[str, Any]] = await run(FindOne(context, filter))
        return batch[0] if batch else None

    return find_one


async def measure(uri: str, pairs: int, batch: int, label: str) -> None:
    client: asyncmongo.AsyncMongoClient[dict[str, Any]] = asyncmongo.AsyncMongoClient(uri)
    floor = await FloorClient.connect(uri)
    try:
        corpus = client.perftest.corpus
        expected = await corpus.find_one({"_id": 1})
        fused = fused_find_one(client, corpus)
        flat = flat_find_one(client, corpus)
        deeper = nested(flat)
        below_api = executor_find_one(client, corpus)
        leaner = lean_find_one(client, corpus)
        if (
            await below_api({"_id": 1}) != expected
            or await leaner({"_id": 1}) != expected
            or await fused({"_id": 1}) != expected
            or await flat({"_id": 1}) != expected
            or await deeper({"_id": 1}) != expected
        ):
            raise AssertionError("a fused find_one returned another document")
        samples = await paired_cpu(
            {
                "asyncmongo": lambda: corpus.find_one({"_id": 1}),
                "executor": lambda: below_api({"_id": 1}),
                "lean": lambda: leaner({"_id": 1}),
                "fused": lambda: fused({"_id": 1}),
                "flat": lambda: flat({"_id": 1}),
                "nested": lambda: deeper({"_id": 1}),
                "floor": lambda: floor.find_one("perftest", "corpus", {"_id": 1}),
            },
            pairs,
            batch,
        )
    finally:
        await client.close()
        floor.close()
    print(f"find one by _id, {label}, {pairs} pairs of {batch} operations\n")
    _table(samples, ("asyncmongo", "executor", "lean", "nested", "flat", "fused", "floor"))


async def measure_insert(uri: str, pairs: int, batch: int, label: str) -> None:
    """insert_one: asyncmongo's and the fused one's CPU per op, paired with the floor's."""
    small = load_data().small
    client: asyncmongo.AsyncMongoClient[dict[str, Any]] = asyncmongo.AsyncMongoClient(uri)
    floor = await FloorClient.connect(uri)
    try:
        target = client.perftest.floor_ratio_insert
        await target.insert_one(dict(small))
        fused = fused_insert_one(client, target)
        await fused(dict(small))
        samples = await paired_cpu(
            {
                "asyncmongo": lambda: target.insert_one(dict(small)),
                "fused": lambda: fused(dict(small)),
                "floor": lambda: floor.insert_one("perftest", "floor_ratio_insert",
                                                  dict(small)),
            },
            pairs,
            batch,
        )
    finally:
        await client.close()
        floor.close()
    print(f"small doc insert_one, {label}, {pairs} pairs of {batch} operations\n")
    _table(samples, ("asyncmongo", "fused", "floor"))


def _table(samples: dict[str, list[float]], names: tuple[str, ...]) -> None:
    print("| client | CPU µs/op | / floor (median) | quartiles |")
    print("|---|---:|---:|---:|")
    for name in names:
        ratios = paired_ratios(samples[name], samples["floor"])
        low, _, high = statistics.quantiles(ratios, n=4)
        print(f"| {name} | {statistics.median(samples[name]):.1f} "
              f"| {statistics.median(ratios):.2f}x | {low:.2f}x .. {high:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=("find_one", "insert_one"), default="find_one")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=300)
    args = parser.parse_args()
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    run = measure if args.op == "find_one" else measure_insert
    with ReplayServer(find_many=0) as server, asyncio.Runner(loop_factory=factory) as runner:
        runner.run(run(server.uri, args.pairs, args.batch, f"replay server, {args.loop} loop"))


if __name__ == "__main__":
    main()
