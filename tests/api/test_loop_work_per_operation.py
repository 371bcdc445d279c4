"""Per operation, a warm client creates no asyncio task and takes two event-loop iterations.

find_one, insert_one and a run command, counted rather than timed, so the test is
deterministic:

- Tasks: the loop's task factory is replaced by one that counts the tasks it makes (every
  ``create_task``, ``ensure_future`` of a coroutine, ``gather`` and ``TaskGroup`` goes
  through it).
- Iterations: ``_run_once`` of asyncio's loop (one call per iteration: poll the selector,
  then run the callbacks that are ready) is wrapped, on the loop instance, by a counter. An
  operation starts and ends inside a step of the test's task, so the iterations counted from
  its start to its end are those it waited for: the least is two, one in which the reply's
  bytes reach ``data_received`` and resolve the waiting future, one in which the task
  resumes with the reply. uvloop has no such method; the test needs asyncio's loop.
- Only the client runs on the counted loop: the simulated deployment serves from an event
  loop of its own in a thread (on the same loop, its read wake-up and its handler's step would
  add two iterations per operation), and the client polls its server once a minute with no
  RTT monitor, so no monitoring runs while operations are counted.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.testing import Standalone

T = TypeVar("T")
OPERATIONS = 20


class LoopCounter:
    """Counts the running loop's iterations and the tasks it creates, while installed."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.iterations = 0
        self.tasks = 0
        self._loop = loop
        self._run_once: Callable[[], None] = loop._run_once  # type: ignore[attr-defined]
        self._task_factory = loop.get_task_factory()

    def _count_iteration(self) -> None:
        self.iterations += 1
        self._run_once()

    def _count_task(
        self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any], **kwargs: Any
    ) -> asyncio.Task[Any]:
        self.tasks += 1
        return asyncio.Task(coro, loop=loop, **kwargs)

    def install(self) -> None:
        self._loop._run_once = self._count_iteration  # type: ignore[attr-defined]
        self._loop.set_task_factory(self._count_task)  # type: ignore[arg-type]

    def uninstall(self) -> None:
        del self._loop._run_once  # type: ignore[attr-defined]
        self._loop.set_task_factory(self._task_factory)

    async def each_run(
        self, operation: Callable[[int], Awaitable[object]], runs: int
    ) -> list[tuple[int, int]]:
        """(tasks created, iterations taken) by each of ``runs`` awaits of ``operation``."""
        counts = []
        for i in range(runs):
            tasks, iterations = self.tasks, self.iterations
            await operation(i)
            counts.append((self.tasks - tasks, self.iterations - iterations))
        return counts


@asynccontextmanager
async def standalone_on_its_own_loop() -> AsyncIterator[Standalone]:
    """A simulated standalone served by an event loop in a thread of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="simulated standalone")
    thread.start()

    def on_server_loop(coro: Coroutine[Any, Any, T]) -> Awaitable[T]:
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))

    server = Standalone()
    try:
        await on_server_loop(server.__aenter__())
        try:
            yield server
        finally:
            await on_server_loop(server.__aexit__(None, None, None))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()


async def test_a_warm_operation_creates_no_task_and_takes_two_loop_iterations() -> None:
    loop = asyncio.get_running_loop()
    if not hasattr(loop, "_run_once"):
        pytest.skip("counting iterations needs asyncio's loop (it wraps _run_once)")
    async with standalone_on_its_own_loop() as server:
        uri = f"{server.uri}?serverMonitoringMode=poll&heartbeatFrequencyMS=60000"
        async with AsyncMongoClient(uri) as client:
            db, coll = client.db, client.db.coll
            operations: dict[str, Callable[[int], Awaitable[object]]] = {
                "find_one": lambda i: coll.find_one({"_id": 0}),
                "insert_one": lambda i: coll.insert_one({"n": i}),
                "command": lambda i: db.command("ping"),
            }
            await coll.insert_one({"_id": 0})
            for operation in operations.values():  # warm: a pooled connection, a session
                await operation(-1)
            counter = LoopCounter(loop)
            counter.install()
            try:
                measured = {
                    name: await counter.each_run(operation, OPERATIONS)
                    for name, operation in operations.items()
                }
            finally:
                counter.uninstall()
    expected = [(0, 2)] * OPERATIONS  # (new tasks, loop iterations) of each operation
    assert measured == dict.fromkeys(operations, expected)
