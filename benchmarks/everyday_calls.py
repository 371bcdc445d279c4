"""The calls a web application makes most, beside the benchmarking spec's tasks: client CPU
per call against PyMongo's ``AsyncMongoClient`` in the same pairs, and asyncmongo's Python
bytecodes per call.

The spec's tasks (``driver_bench.py``) cover find_one by _id, insert_one and emptying a
large cursor. A list endpoint runs ``find(filter).to_list()`` or ``async for`` over a small
result, and an update or delete endpoint ``update_one``, ``replace_one`` or ``delete_one``;
those take other paths through the driver (a cursor, the write command of a statement), so
they are measured here. Against the replay server (``replay_server.py``, a separate process
answering from canned replies): a find whose filter has ``_id`` gets one document, any other
find ``--many`` documents in two batches.

Each call's CPU is the median of paired ratios (``bench_support.paired_cpu``: both drivers in
one loop, taking turns in batches of the same call, so the machine's load cancels out).
Bytecodes (``bytecodes.count``: ``sys.settrace`` opcode events, the event loop's and the
call's own frames included) do not move between runs, so they show a change to the driver's
path exactly.

    PYTHONPATH=. python benchmarks/everyday_calls.py [--loop asyncio|uvloop] [--pairs 20]
        [--batch 300] [--many 1000] [--only NAME]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import ReplayServer, paired_cpu, paired_ratios
from bytecodes import count

import asyncmongo

Call = Callable[[], Awaitable[Any]]


async def _iterate(cursor: Any) -> list[Any]:
    return [document async for document in cursor]


def calls(collection: Any, written: Any, many: int) -> dict[str, tuple[Call, int]]:
    """name -> (the call on ``collection``/``written`` of one driver, its batch divisor): the
    same code runs on either driver (PyMongo's async API and asyncmongo's agree here)."""
    return {
        "find_one by _id": (lambda: collection.find_one({"_id": 1}), 1),
        "find(filter).to_list(), 1 document": (
            lambda: collection.find({"_id": 1}).to_list(), 1
        ),
        "async for over find, 1 document": (lambda: _iterate(collection.find({"_id": 1})), 1),
        f"find().to_list(), {many} documents": (lambda: collection.find({}).to_list(), many),
        "update_one": (lambda: written.update_one({"x": 1}, {"$set": {"y": 1}}), 1),
        "replace_one": (lambda: written.replace_one({"x": 1}, {"x": 1, "y": 2}), 1),
        "delete_one": (lambda: written.delete_one({"x": 1}), 1),
    }


async def measure(uri: str, pairs: int, batch: int, many: int, only: str | None) -> None:
    try:
        from pymongo import AsyncMongoClient as PyMongoClient
    except ImportError:
        raise SystemExit("PyMongo is not installed: this benchmark compares against it") from None
    ours = asyncmongo.AsyncMongoClient(uri)
    theirs: Any = PyMongoClient(uri)
    try:
        mine = calls(ours.perftest.corpus, ours.perftest.written, many)
        other = calls(theirs.perftest.corpus, theirs.perftest.written, many)
        header = f"{'call':38} {'asyncmongo µs':>14} {'PyMongo µs':>11} {'ratio':>6}"
        print(f"{header} {'bytecodes':>10}")
        for name, (call, divisor) in mine.items():
            if only is not None and only not in name:
                continue
            size = max(3, batch // divisor)
            samples = await paired_cpu(
                {"asyncmongo": call, "pymongo": other[name][0]}, pairs, size
            )
            ratio = statistics.median(paired_ratios(samples["asyncmongo"], samples["pymongo"]))
            ops = max(5, 100 // divisor)
            counts = await count(call, ops=ops, warmup=max(5, 300 // divisor))
            bytecodes = sum(counts.values()) / ops
            print(
                f"{name:38} {statistics.median(samples['asyncmongo']):14.1f} "
                f"{statistics.median(samples['pymongo']):11.1f} {ratio:6.3f} {bytecodes:10.0f}",
                flush=True,
            )
    finally:
        await ours.close()
        await theirs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=300, help="calls per sample")
    parser.add_argument("--many", type=int, default=1000, help="documents of the large find")
    parser.add_argument("--only", help="run only the calls whose name has this")
    args = parser.parse_args()
    with ReplayServer(args.many) as server:
        coroutine = measure(server.uri, args.pairs, args.batch, args.many, args.only)
        if args.loop == "uvloop":
            import uvloop

            uvloop.run(coroutine)
        else:
            asyncio.run(coroutine)


if __name__ == "__main__":
    main()
