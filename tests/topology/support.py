"""Helpers shared by the topology tests."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.address import Address
from asyncmongo.core.sdam import ServerType
from asyncmongo.core.sdam.events import ServerDescriptionChangedEvent
from asyncmongo.errors import AutoReconnect
from asyncmongo.runtime.monitor import Monitor
from asyncmongo.runtime.topology import Topology

INSERT = {"insert": "things", "documents": [{"x": 1}]}


def address(host: str) -> tuple[str, int]:
    """A simulated member's ``host:port`` as the topology's address tuple."""
    name, port = host.rsplit(":", 1)
    return name, int(port)


async def wait_until(predicate: Callable[[], object], within: float = 2.0) -> None:
    """Poll ``predicate`` (a test's observer only: the driver itself never polls)."""
    async with asyncio.timeout(within):
        while not predicate():  # noqa: ASYNC110 (observing from outside, on purpose)
            await asyncio.sleep(0.002)


def monitors(topology: Topology) -> list[Monitor]:
    """Every server's monitor."""
    return [s.monitor for s in topology.servers.values() if s.monitor is not None]


@contextlib.asynccontextmanager
async def recording_client(uri: str) -> AsyncIterator[tuple[AsyncMongoClient, list[Any]]]:
    """A client and the list of every event it emits. Heartbeats are 10 s apart, so within a
    test the only checks are the first and those the test's errors request."""
    events: list[Any] = []
    async with AsyncMongoClient(
        uri, heartbeatFrequencyMS=10_000, event_listeners=[events.append]
    ) as client:
        yield client, events


def unknown_marks(events: list[Any], where: Address) -> list[Any]:
    """The ServerDescriptionChangedEvents that marked ``where`` Unknown, in order."""
    return [
        e
        for e in events
        if isinstance(e, ServerDescriptionChangedEvent)
        and e.address == where
        and e.new_description.server_type is ServerType.UNKNOWN
    ]


def assert_no_operation_left(topology: Topology) -> None:
    """No server has a connection checked out, a checkout waiting, or an operation counted."""
    for server in topology.servers.values():
        stats = server.pool.statistics()
        assert stats.in_use == 0 and stats.waiting == 0
        assert server.operation_count == 0


async def soak_step_downs(
    client: AsyncMongoClient,
    step_down: Callable[[], object],
    *,
    command: Mapping[str, Any],
    duration_s: float,
    every_s: float,
    workers: int,
) -> tuple[collections.Counter[str], int]:
    """``workers`` tasks run ``command`` on "db" back to back for ``duration_s`` while
    ``step_down()`` (plain or async) runs every ``every_s``. Returns the outcomes ("ok" or the
    AutoReconnect subclass's name, NotPrimaryError included) and the number of step-downs."""
    outcomes: collections.Counter[str] = collections.Counter()
    loop = asyncio.get_running_loop()
    stop = loop.time() + duration_s

    async def worker() -> None:
        while loop.time() < stop:
            try:
                await client._run_command("db", command)
            except AutoReconnect as exc:  # NotPrimaryError is one of these
                outcomes[type(exc).__name__] += 1
            else:
                outcomes["ok"] += 1

    async def step_downs() -> int:
        count = 0
        while loop.time() < stop - every_s:
            await asyncio.sleep(every_s)
            stepped = step_down()
            if inspect.isawaitable(stepped):
                await stepped
            count += 1
        return count

    async with asyncio.TaskGroup() as group:
        for _ in range(workers):
            group.create_task(worker())
        stepped = group.create_task(step_downs())
    return outcomes, stepped.result()
