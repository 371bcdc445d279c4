"""Memory: what asyncmongo keeps and allocates, side by side with PyMongo's AsyncMongoClient.

Python allocations are counted with tracemalloc (deterministic, unlike RSS; the kernel's
socket buffers are not in them), against a simulated standalone in a child process
(``python -m asyncmongo.testing standalone``: its memory is not the client's). Each row is
measured for both drivers in the same run, asyncmongo first, and reports the ratio:

- **import**: what ``import asyncmongo`` / ``import pymongo`` leaves allocated, and what it
  adds to the resident set (shared libraries included; fresh interpreters);
- **client**: a client after its first command (topology, monitors, the pool and its one
  connection, the server session pool), once a first client of the same driver has come
  and gone (what a driver imports or builds once per process is no client's);
- **pooled connection**: per idle connection, after 100 operations held on the server by a
  ``blockConnection`` fail point made the pool open 100 (``maxPoolSize=100``; the server's
  ``serverStatus`` confirms the count); the floor's one connection (benchmarks/floor_client.py:
  a protocol, a transport, a reader) is the least a connection can keep;
- **waiting operation**: per operation while 1,000 ``find_one`` wait for one of 10
  connections (``maxPoolSize=10``, the first ten held on the server), the benchmark's own task
  per operation included (the same for both drivers);
- **open cursor**: per cursor, 1,000 cursors open on the server with their first batch
  (``batch_size=2``) read;
- **dropped cursor**: per cursor, what stays 2 s after 1,000 such cursors were dropped
  without a close (each driver kills them in the background: asyncmongo from a client task
  as each is collected, PyMongo from a periodic task, once a second);
- **to_list**: ``find({}).to_list()`` of 10,000 small documents: the peak above what the
  result itself keeps (the driver's transient buffers and copies).

    PYTHONPATH=. python benchmarks/memory_bench.py [--loop asyncio|uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor_client import FloorClient
from gridfs_bench import simulator

import asyncmongo

#: Pooled connections opened, operations left waiting, cursors left open, documents listed.
CONNECTIONS = 100
WAITING = 1_000
CURSORS = 1_000
DOCUMENTS = 10_000
#: How long dropped cursors are given to be cleaned up (PyMongo's periodic task kills the
#: cursors its ``__del__`` queued once a second).
DROPPED_WAIT_S = 2.0
#: How long the fail point holds each blocked command on the server (ms).
BLOCK_MS = 2000

Factory = Callable[..., Any]

_IMPORT_PROBE = """
import os, sys
def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
if sys.argv[2] == "traced":
    import tracemalloc
    tracemalloc.start()
    __import__(sys.argv[1])
    print(tracemalloc.get_traced_memory()[0])
else:
    before = resident()
    __import__(sys.argv[1])
    print(resident() - before)
"""


def import_cost(module: str) -> tuple[int, int]:
    """(bytes ``import module`` leaves traced, bytes it adds to the resident set) in fresh
    interpreters (the resident set measured without tracemalloc, whose own tables grow
    with what it traces); the resident set is Linux's /proc/self/statm."""
    def probe(what: str) -> int:
        return int(subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE, module, what],
            check=True, capture_output=True, text=True,
            cwd=Path(__file__).resolve().parents[1],
        ).stdout)

    return probe("traced"), min(probe("resident") for _ in range(3))


def traced() -> int:
    """Bytes allocated now, after a full collection (what is retained)."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


async def _block_finds(admin: Any, times: int) -> None:
    await admin.command({
        "configureFailPoint": "failCommand",
        "mode": {"times": times},
        "data": {"failCommands": ["find"], "blockConnection": True, "blockTimeMS": BLOCK_MS},
    })


async def _connections(admin: Any) -> int:
    status = await admin.command("serverStatus")
    return int(status["connections"]["current"])


async def client_rows(name: str, factory: Factory, uri: str) -> dict[str, float]:
    """Every per-client row for one driver (see the module's docstring)."""
    rows: dict[str, float] = {}
    base = traced()
    client = factory(uri)
    await client.admin.command("ping")
    rows["client"] = traced() - base
    await client.close()
    del client

    # pooled connections: CONNECTIONS operations held on the server at once
    client = factory(uri, maxPoolSize=CONNECTIONS)
    coll = client.perftest.memory
    await coll.find_one({})
    before = traced()
    opened = await _connections(client.admin)
    await _block_finds(client.admin, CONNECTIONS)
    await asyncio.gather(*(coll.find_one({}) for _ in range(CONNECTIONS)))
    grown = await _connections(client.admin) - opened
    if grown < CONNECTIONS * 0.9:
        raise RuntimeError(f"{name}: the pool opened {grown} connections, not ~{CONNECTIONS}")
    rows["pooled connection"] = (traced() - before) / grown
    await client.close()
    del client, coll

    # waiting operations: WAITING operations for maxPoolSize=10 connections
    client = factory(uri, maxPoolSize=10)
    coll = client.perftest.memory
    await coll.find_one({})
    await _block_finds(client.admin, 10)
    before = traced()
    tasks = [asyncio.ensure_future(coll.find_one({})) for _ in range(WAITING)]
    await asyncio.sleep(BLOCK_MS / 4000)  # every operation has started and waits
    if any(task.done() for task in tasks):
        raise RuntimeError(f"{name}: operations finished while the pool was held")
    rows["waiting operation"] = (traced() - before) / WAITING
    await asyncio.gather(*tasks)
    del tasks
    await client.close()
    del client, coll

    # open cursors
    client = factory(uri)
    coll = client.perftest.memory
    await coll.find_one({})
    before = traced()
    cursors = []
    for _ in range(CURSORS):
        cursor = coll.find({}, batch_size=2)
        await cursor.next()
        cursors.append(cursor)
    rows["open cursor"] = (traced() - before) / CURSORS
    for cursor in cursors:
        await cursor.close()
    del cursors, cursor

    # dropped cursors: opened, read once, dropped without a close
    before = traced()
    for _ in range(CURSORS):
        await coll.find({}, batch_size=2).next()
    await asyncio.sleep(DROPPED_WAIT_S)  # each driver cleans up in the background
    rows["dropped cursor"] = (traced() - before) / CURSORS

    # to_list: the peak above the result
    before = traced()
    tracemalloc.reset_peak()
    documents = await coll.find({}).to_list()
    peak = tracemalloc.get_traced_memory()[1] - before
    if len(documents) != DOCUMENTS:
        raise RuntimeError(f"{name}: listed {len(documents)} documents")
    kept = traced() - before
    rows["to_list"] = peak - kept
    rows["to_list result"] = kept
    del documents
    await client.close()
    return rows


async def floor_connection(uri: str) -> float:
    """What the floor's one connection keeps (protocol, transport, reader, lsid)."""
    before = traced()
    floor = await FloorClient.connect(uri)
    await floor.command({"ping": 1, "$db": "admin"})
    kept = traced() - before
    floor.close()
    return kept


async def measure(uri: str) -> dict[str, dict[str, float]]:
    from pymongo import AsyncMongoClient as PyMongoAsync  # the PyMongo side only

    seed = asyncmongo.AsyncMongoClient(uri)
    await seed.perftest.memory.drop()
    await seed.perftest.memory.insert_many(
        [{"_id": i, "x": i, "name": f"document {i}"} for i in range(DOCUMENTS)]
    )
    await seed.close()
    for factory in (asyncmongo.AsyncMongoClient, PyMongoAsync):
        # what a driver imports or builds once per process on first use is not a client's
        warm: Any = factory(uri)
        await warm.perftest.memory.find_one({})
        await warm.close()
    tracemalloc.start()
    try:
        results = {
            "asyncmongo": await client_rows("asyncmongo", asyncmongo.AsyncMongoClient, uri),
            "pymongo": await client_rows("pymongo", PyMongoAsync, uri),
            "floor": {"pooled connection": await floor_connection(uri)},
        }
    finally:
        tracemalloc.stop()
    return results


def _kib(value: float) -> str:
    return f"{value / 1024:,.1f}"


def report(results: dict[str, dict[str, float]], imports: dict[str, tuple[int, int]]) -> None:
    ours, theirs = results["asyncmongo"], results["pymongo"]
    print("| what | asyncmongo KiB | PyMongo async KiB | asyncmongo / PyMongo | floor KiB |")
    print("|---|---:|---:|---:|---:|")
    (a_traced, a_rss), (p_traced, p_rss) = imports["asyncmongo"], imports["pymongo"]
    print(f"| import (traced) | {_kib(a_traced)} | {_kib(p_traced)} "
          f"| {a_traced / p_traced:.2f}x | |")
    print(f"| import (resident set) | {_kib(a_rss)} | {_kib(p_rss)} | {a_rss / p_rss:.2f}x | |")
    for row in ("client", "pooled connection", "waiting operation", "open cursor", "to_list"):
        floor = results["floor"].get(row)
        print(f"| {row} | {_kib(ours[row])} | {_kib(theirs[row])} "
              f"| {ours[row] / theirs[row]:.2f}x | {'' if floor is None else _kib(floor)} |")
    # about nothing for both: bytes, and no ratio of two noises
    print(f"| dropped cursor (bytes) | {ours['dropped cursor']:.0f} "
          f"| {theirs['dropped cursor']:.0f} | | |")
    print(f"\n(to_list's result itself: {_kib(ours['to_list result'])} KiB with asyncmongo, "
          f"{_kib(theirs['to_list result'])} KiB with PyMongo)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    args = parser.parse_args()
    imports = {name: import_cost(name) for name in ("asyncmongo", "pymongo")}
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with simulator() as uri, asyncio.Runner(loop_factory=factory) as runner:
        results = runner.run(measure(uri))
    if args.json:
        print(json.dumps({"imports": imports, **results}, indent=1))
    report(results, imports)


if __name__ == "__main__":
    main()
