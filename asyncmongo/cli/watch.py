"""``topology URI [--watch]``: the servers table, and with --watch the events as they happen.

The command subscribes to ``client.events()`` before connecting, so it sees the topology open
and every pool from its creation; one task consumes the events while the command waits for
its end (the deployment discovered; or --duration, --count, Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, TextIO

from asyncmongo.cli.commands import client_for
from asyncmongo.cli.view import (
    CLEAR_SCREEN,
    LIVE_EVENTS,
    PoolCounts,
    describe_event,
    is_chatty,
    render_screen,
    render_topology,
)
from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.sdam.topology_description import TopologyDescription
from asyncmongo.errors import ServerSelectionTimeoutError
from asyncmongo.monitoring import TopologyDescriptionChangedEvent

__all__ = ["watch_topology"]


async def watch_topology(args: argparse.Namespace, out: TextIO) -> int:
    client = client_for(args)
    stream = client.events()  # before connecting: nothing is missed
    try:
        await client.aconnect()
        if args.watch:
            await _watch(client, stream, args, out)
            return 0
        return await _settle(client, stream, args, out)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
        await client.close()


async def _settle(
    client: AsyncMongoClient, stream: AsyncIterator[Any], args: argparse.Namespace, out: TextIO
) -> int:
    """Wait until every server is known (or --timeout-ms), then print the table once."""
    pools = PoolCounts()
    settled = asyncio.Event()

    def on_event(event: Any) -> None:
        pools.apply(event)
        if _discovered(client.topology_description):
            settled.set()

    if _discovered(client.topology_description):
        settled.set()
    await _consume_until(stream, on_event, settled, args.timeout_ms / 1000)
    description = client.topology_description
    print(render_topology(description, pools), file=out)
    if not any(server.server_type.is_known for server in description.servers.values()):
        raise ServerSelectionTimeoutError(
            f"no server of {client.options.hosts!r} answered within {args.timeout_ms} ms"
        )
    return 0


def _discovered(description: TopologyDescription) -> bool:
    servers = description.servers.values()
    return bool(servers) and all(server.server_type.is_known for server in servers)


async def _watch(
    client: AsyncMongoClient, stream: AsyncIterator[Any], args: argparse.Namespace, out: TextIO
) -> None:
    """Show events until the watch ends: on a terminal a screen redrawn every ``--refresh``
    seconds (the table with current RTTs, then the latest events); otherwise, or with
    ``--plain``, one line per event and the table after each topology change."""
    live = args.live if args.live is not None else out.isatty()
    pools = PoolCounts()
    recent: deque[str] = deque(maxlen=LIVE_EVENTS)
    finished = asyncio.Event()
    shown = 0

    def on_event(event: Any) -> None:
        nonlocal shown
        pools.apply(event)
        if is_chatty(event) and not args.verbose:
            return
        line = describe_event(event, pools)
        if live:
            recent.append(line)
        else:
            print(line, file=out, flush=True)
            if isinstance(event, TopologyDescriptionChangedEvent):
                print(render_topology(event.new_description, pools), file=out, flush=True)
        shown += 1
        if args.count is not None and shown >= args.count:
            finished.set()

    def draw() -> None:
        screen = render_screen(client.topology_description, pools, recent)
        out.write(CLEAR_SCREEN + screen + "\n")
        out.flush()

    async def redraw() -> None:
        while True:
            draw()
            await asyncio.sleep(args.refresh)

    painter = asyncio.create_task(redraw(), name="asyncmongo-cli-redraw") if live else None
    try:
        await _consume_until(stream, on_event, finished, args.duration)
    finally:
        if painter is not None:
            painter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await painter
    if live:
        draw()
    else:
        print(render_topology(client.topology_description, pools), file=out, flush=True)


async def _consume_until(
    stream: AsyncIterator[Any],
    on_event: Callable[[Any], None],
    done: asyncio.Event,
    seconds: float | None,
) -> None:
    """Feed ``on_event`` from ``stream`` in a task until ``done`` is set or ``seconds`` pass."""

    async def consume() -> None:
        async for event in stream:
            on_event(event)

    consumer = asyncio.create_task(consume(), name="asyncmongo-cli-events")
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), seconds)
    finally:
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer
