"""asyncmongo's client CPU per operation over the floor client's, measured so noise cancels
(issue #14's target: at most 1.3x for run command, find one by _id and small doc insert_one).

driver_bench.py's floor table times each driver in runs of its own, seconds apart; on a
shared 2-core machine the load moves between them by more than the differences being
measured (its "range over repeats" column often spans 1.3x to 2x for one cell). Here one
process and one event loop hold both clients, connected to the same server; they take
turns, a short batch of the same operation each, and every pair of batches gives one CPU
ratio (``bench_support.paired_cpu``). The report is the median ratio over all pairs, with
its quartiles.

PyMongo's AsyncMongoClient, when it is installed, takes its turns in the same pairs (unless
``--no-pymongo``), so its own ratio to the floor is measured under the same load: the
driver asyncmongo replaces, side by side.

All clients share the loop, so the floor's batches also pay the little that the drivers'
idle monitors add to each loop iteration (their timers are scheduled): a slight bias in
the drivers' favour that driver_bench.py's separate runs do not have.

    PYTHONPATH=. python benchmarks/floor_ratio.py [--server replay|jongodb]
        [--loop asyncio|uvloop] [--pairs 40] [--batch 300] [--no-pymongo]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import (
    Call,
    ReplayServer,
    jongodb_server,
    load_data,
    paired_cpu,
    paired_ratios,
)
from floor_client import FloorClient

import asyncmongo

#: Issue #14: asyncmongo's client CPU per operation at most this multiple of the floor's.
TARGET = 1.3


def pymongo_client(uri: str) -> Any:
    """PyMongo's AsyncMongoClient for ``uri``, or None when PyMongo is not installed."""
    try:
        from pymongo import AsyncMongoClient
    except ImportError:
        return None
    return AsyncMongoClient(uri)


async def measure(
    uri: str, pairs: int, batch: int, server: str, label: str, with_pymongo: bool
) -> None:
    small = load_data().small
    client: asyncmongo.AsyncMongoClient[dict[str, Any]] = asyncmongo.AsyncMongoClient(uri)
    floor = await FloorClient.connect(uri)
    pymongo = pymongo_client(uri) if with_pymongo else None
    try:
        db = client.perftest
        corpus = db.corpus
        target = db.floor_ratio_insert

        async def floor_insert() -> None:
            await floor.insert_one("perftest", "floor_ratio_insert", dict(small))

        async def driver_insert() -> None:
            await target.insert_one(dict(small))

        tasks: dict[str, dict[str, Call]] = {
            "run command": {
                "asyncmongo": lambda: db.command("hello", True),
                "floor": lambda: floor.run_command("perftest", "hello", True),
            },
            "find one by _id": {
                "asyncmongo": lambda: corpus.find_one({"_id": 1}),
                "floor": lambda: floor.find_one("perftest", "corpus", {"_id": 1}),
            },
            "small doc insert_one": {"asyncmongo": driver_insert, "floor": floor_insert},
        }
        if pymongo is not None:
            theirs = pymongo.perftest
            tasks["run command"]["pymongo"] = lambda: theirs.command("hello")
            tasks["find one by _id"]["pymongo"] = lambda: theirs.corpus.find_one({"_id": 1})

            async def pymongo_insert() -> None:
                await theirs.floor_ratio_insert.insert_one(dict(small))

            tasks["small doc insert_one"]["pymongo"] = pymongo_insert

        async def empty_target() -> None:
            await target.delete_many({})

        rows = []
        for task, calls in tasks.items():
            # jongodb's insert slows down as the collection grows (about 10 ms after 1,000
            # documents), and a client's CPU per operation grows with the time it waits:
            # there every batch of inserts starts from an empty collection
            reset = empty_target if server == "jongodb" and "insert" in task else None
            samples = await paired_cpu(calls, pairs, batch, reset)
            rows.append((task, samples))
        if server == "jongodb":
            await target.delete_many({})  # jongodb keeps everything in memory
    finally:
        await client.close()
        floor.close()
        if pymongo is not None:
            await pymongo.close()
    report(rows, f"{label}, {pairs} pairs of {batch} operations, target <= {TARGET}x")


def report(rows: list[tuple[str, dict[str, list[float]]]], title: str) -> None:
    """One markdown row per task: CPU µs per op, and each driver's paired ratio to the floor
    (median, with asyncmongo's quartiles)."""
    with_pymongo = all("pymongo" in samples for _, samples in rows)
    print(title + "\n")
    head = "| task | floor µs/op | asyncmongo µs/op | asyncmongo / floor | quartiles |"
    if with_pymongo:
        head += " PyMongo µs/op | PyMongo / floor |"
    print(head + " target |")
    print("|---|---:|---:|---:|---:|" + ("---:|---:|" if with_pymongo else "") + "---|")
    for task, samples in rows:
        floor = samples["floor"]
        ratios = paired_ratios(samples["asyncmongo"], floor)
        low, _, high = statistics.quantiles(ratios, n=4)
        ratio = statistics.median(ratios)
        line = (f"| {task} | {statistics.median(floor):.1f} "
                f"| {statistics.median(samples['asyncmongo']):.1f} | {ratio:.2f}x "
                f"| {low:.2f}x .. {high:.2f}x |")
        if with_pymongo:
            theirs = statistics.median(paired_ratios(samples["pymongo"], floor))
            line += f" {statistics.median(samples['pymongo']):.1f} | {theirs:.2f}x |"
        print(line + (" met |" if ratio <= TARGET else " MISS |"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", choices=("replay", "jongodb"), default="replay")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--batch", type=int, default=300)
    parser.add_argument("--no-pymongo", dest="pymongo", action="store_false",
                        help="leave PyMongo's AsyncMongoClient out of the pairs")
    args = parser.parse_args()
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    server: AbstractContextManager[Any] = (
        ReplayServer(find_many=0) if args.server == "replay" else jongodb_server()
    )
    with server as running, asyncio.Runner(loop_factory=factory) as runner:
        runner.run(measure(running.uri, args.pairs, args.batch, args.server,
                           f"{args.server} server, {args.loop} loop", args.pymongo))


if __name__ == "__main__":
    main()
