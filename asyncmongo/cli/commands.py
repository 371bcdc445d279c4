"""``ping``, ``hello`` and ``bench``: one client each, closed before the command returns."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any, TextIO

from asyncmongo.bson.json_util import dumps
from asyncmongo.client import AsyncMongoClient
from asyncmongo.core.address import format_address
from asyncmongo.core.selection.read_preference import Mode, ReadPreference
from asyncmongo.errors import InvalidArgument

__all__ = ["bench", "client_for", "hello", "percentile", "ping"]


def client_for(args: argparse.Namespace, **options: Any) -> AsyncMongoClient:
    """The command's client: ``--timeout-ms`` bounds server selection and connecting."""
    return AsyncMongoClient(
        args.uri,
        serverSelectionTimeoutMS=args.timeout_ms,
        connectTimeoutMS=args.timeout_ms,
        appname="asyncmongo-cli",
        **options,
    )


#: ping and hello answer from any member: a replica set without a primary still answers.
_ANY_MEMBER = ReadPreference(Mode.PRIMARY_PREFERRED)


async def ping(args: argparse.Namespace, out: TextIO) -> int:
    async with client_for(args) as client:
        admin = client.admin
        await admin.command("ping", read_preference=_ANY_MEMBER)  # discovers and connects
        start = time.perf_counter()
        await admin.command("ping", read_preference=_ANY_MEMBER)
        elapsed_ms = (time.perf_counter() - start) * 1000
        where = _answered_by(client)
    print(f"ok: ping answered in {elapsed_ms:.2f} ms by {where}", file=out)
    return 0


async def hello(args: argparse.Namespace, out: TextIO) -> int:
    async with client_for(args) as client:
        reply = await client.admin.command("hello", read_preference=_ANY_MEMBER)
    print(dumps(reply, indent=2), file=out)
    return 0


async def bench(args: argparse.Namespace, out: TextIO) -> int:
    db_name, _, coll_name = args.namespace.partition(".")
    if not db_name or not coll_name:
        raise InvalidArgument(f"--namespace must be DB.COLLECTION, not {args.namespace!r}")
    async with client_for(args, maxPoolSize=max(args.concurrency, 1)) as client:
        collection = client[db_name][coll_name]

        async def operation() -> None:
            if args.op == "ping":
                await client.admin.command("ping")
            else:
                await collection.find_one({})

        await operation()  # discovery, the first connection: not measured
        latencies: list[float] = []
        stop = time.perf_counter() + args.duration

        async def worker() -> None:
            while (now := time.perf_counter()) < stop:
                await operation()
                latencies.append(time.perf_counter() - now)

        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for _ in range(args.concurrency):
                group.create_task(worker())
        elapsed = time.perf_counter() - started
        where = _answered_by(client)
    print(_bench_report(args, where, latencies, elapsed), file=out)
    return 0


def _bench_report(
    args: argparse.Namespace, where: str, latencies: list[float], elapsed: float
) -> str:
    ms = sorted(sample * 1000 for sample in latencies)
    lines = [
        f"{args.op} on {where}: {len(ms)} operations from {args.concurrency} tasks "
        f"in {elapsed:.2f} s",
        f"throughput: {len(ms) / elapsed:,.0f} ops/s",
    ]
    if ms:
        lines.append(
            "latency ms: "
            f"min {ms[0]:.3f}  p50 {percentile(ms, 50):.3f}  p90 {percentile(ms, 90):.3f}  "
            f"p99 {percentile(ms, 99):.3f}  max {ms[-1]:.3f}  mean {statistics.fmean(ms):.3f}"
        )
    return "\n".join(lines)


def percentile(ordered: list[float], pct: float) -> float:
    """The nearest-rank percentile of an ascending, non-empty list."""
    rank = max(1, round(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _answered_by(client: AsyncMongoClient) -> str:
    address = client.address
    description = client.topology_description
    kind = description.topology_type_name
    return f"{format_address(address)} ({kind})" if address is not None else kind
