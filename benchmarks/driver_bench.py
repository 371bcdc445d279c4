"""Driver benchmarks (specs/benchmarking single- and multi-document tasks), side by side.

Drivers: asyncmongo, PyMongo's ``AsyncMongoClient`` and PyMongo's synchronous
``MongoClient``; the async drivers on asyncio and on uvloop. Servers: the replay server
(``benchmarks/replay_server.py``, canned replies, so the client is the bottleneck) and
jongodb (installed on first use by ``tests/support/jongodb.py``). Each (server, driver,
loop) runs in its own worker process, so the CPU time measured (``time.process_time`` around
the task only) is that client's alone; servers run in their own processes.

Tasks: run command ({hello: true}), find one by _id, small and large insertOne, find many and
empty the cursor, small and large insertMany, plus find_one by _id and insert_one from 100
concurrent tasks (100 threads for the synchronous driver). Reported per task: the median
rate (operations, or documents for the bulk tasks, per second) and the client's CPU time per
operation, with the ratios against PyMongo async (same loop) and PyMongo sync. The spec's
10,000 operations are scaled down by ``--ops`` (default: 5,000 against the replay server,
500 against jongodb, which needs ~1.6 ms per find_one) so a full run takes minutes.

The replay server's own capacity is checked first: a raw pipelined client (no driver) must
reach several times the fastest driver's rate, or the table measures the server.

    python benchmarks/driver_bench.py [--servers replay,jongodb] [--ops N] [--iterations K]
                                      [--drivers asyncmongo,pymongo-async,pymongo-sync]
                                      [--loops asyncio,uvloop] [--markdown]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TGZ = Path("/work/shared/benchmark-data/single_and_multi_document.tgz")
DRIVERS = ("asyncmongo", "pymongo-async", "pymongo-sync")
LOOPS = ("asyncio", "uvloop")
CONCURRENCY = 100
LARGE_OPS = 10
#: (task, how many operations: "n" = --ops, "large" = 10)
TASKS = (
    ("run_command", "n"),
    ("find_one_by_id", "n"),
    ("small_insert_one", "n"),
    ("large_insert_one", "large"),
    ("find_many", "n"),
    ("small_bulk_insert", "n"),
    ("large_bulk_insert", "large"),
    ("find_one_100_tasks", "n"),
    ("insert_one_100_tasks", "n"),
)
SINGLE_DOC_TASKS = ("run_command", "find_one_by_id", "small_insert_one", "large_insert_one")


def load_datasets() -> dict[str, dict[str, Any]]:
    data = {}
    with tarfile.open(TGZ) as archive:
        for name in ("tweet", "small_doc", "large_doc"):
            member = archive.extractfile(f"single_and_multi_document/{name}.json")
            assert member is not None
            data[name] = json.load(member)
    return data


# -- the three drivers behind one async interface -----------------------------------------


class Driver:
    """What a task needs: a collection-like object with async methods."""

    def __init__(self, name: str, uri: str) -> None:
        self.name = name
        self.uri = uri
        self.sync = name == "pymongo-sync"
        self.pool = ThreadPoolExecutor(CONCURRENCY) if self.sync else None

    async def open(self, database: str) -> None:
        if self.name == "asyncmongo":
            from asyncmongo import AsyncMongoClient

            self.client: Any = AsyncMongoClient(self.uri)
        elif self.name == "pymongo-async":
            from pymongo import AsyncMongoClient as PyAsync

            self.client = PyAsync(self.uri)
        else:
            from pymongo import MongoClient

            self.client = MongoClient(self.uri, maxPoolSize=CONCURRENCY)
        self.db = self.client[database]
        self.admin = self.client["admin"]
        await self.call(self.admin.command, "ping")

    async def close(self) -> None:
        result = self.client.close()
        if not self.sync:
            await result
        if self.pool is not None:
            self.pool.shutdown()

    async def call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self.sync:
            return method(*args, **kwargs)
        return await method(*args, **kwargs)

    async def concurrently(self, job: Callable[[int], Any], ops: int) -> None:
        """``job(i)`` for i in range(ops) from CONCURRENCY tasks (threads when sync)."""
        per_task = [range(k, ops, CONCURRENCY) for k in range(CONCURRENCY)]
        if self.sync:
            assert self.pool is not None
            loop = asyncio.get_running_loop()

            def run(indexes: range) -> None:
                for i in indexes:
                    job(i)

            await asyncio.gather(*(loop.run_in_executor(self.pool, run, r) for r in per_task))
            return

        async def run_async(indexes: range) -> None:
            for i in indexes:
                await job(i)

        await asyncio.gather(*(run_async(r) for r in per_task))

    async def to_list(self, cursor: Any) -> list[Any]:
        if self.sync:
            return list(cursor)
        return [doc async for doc in cursor]


# -- tasks: (setup, task) per name -----------------------------------------------------------


Task = Callable[[], Awaitable[None]]


async def prepare(
    name: str, driver: Driver, ops: int, data: dict[str, Any], iteration: int
) -> Task:
    """Set the task up (not measured) and return the measured part."""
    db = driver.db
    call = driver.call
    coll = db[f"{name}_{iteration}"]
    if name == "run_command":

        async def run_command() -> None:
            for _ in range(ops):
                await call(driver.admin.command, {"hello": True})

        return run_command
    if name in ("find_one_by_id", "find_one_100_tasks"):
        tweets = [dict(data["tweet"], _id=i) for i in range(1, ops + 1)]
        await call(coll.insert_many, tweets)
        if name == "find_one_by_id":

            async def find_one() -> None:
                for i in range(1, ops + 1):
                    await call(coll.find_one, {"_id": i})

            return find_one

        async def find_one_100() -> None:
            await driver.concurrently(lambda i: coll.find_one({"_id": i + 1}), ops)

        return find_one_100
    if name in ("small_insert_one", "large_insert_one", "insert_one_100_tasks"):
        source = data["large_doc" if name == "large_insert_one" else "small_doc"]
        documents = [copy.copy(source) for _ in range(ops)]  # the driver adds each _id
        if name == "insert_one_100_tasks":

            async def insert_100() -> None:
                await driver.concurrently(lambda i: coll.insert_one(documents[i]), ops)

            return insert_100

        async def insert_one() -> None:
            for document in documents:
                await call(coll.insert_one, document)

        return insert_one
    if name == "find_many":
        await call(coll.insert_many, [dict(data["tweet"]) for _ in range(ops)])

        async def find_many() -> None:
            await driver.to_list(coll.find({}))

        return find_many
    source = data["large_doc" if name == "large_bulk_insert" else "small_doc"]
    documents = [copy.copy(source) for _ in range(ops)]

    async def bulk() -> None:
        await call(coll.insert_many, documents)

    return bulk


async def run_worker(args: argparse.Namespace) -> dict[str, Any]:
    data = load_datasets()
    driver = Driver(args.driver, args.uri)
    await driver.open(f"perftest_{os.getpid()}")
    results: dict[str, Any] = {}
    try:
        for name, size in TASKS:
            if args.tasks and name not in args.tasks:
                continue
            ops = LARGE_OPS if size == "large" else args.ops
            rates, cpus = [], []
            for iteration in range(args.iterations):
                task = await prepare(name, driver, ops, data, iteration)
                cpu0, wall0 = time.process_time(), time.perf_counter()
                await task()
                wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
                rates.append(ops / wall)
                cpus.append(cpu / ops)
            results[name] = {
                "ops": ops,
                "rate": statistics.median(rates),
                "cpu_us": statistics.median(cpus) * 1e6,
            }
    finally:
        await driver.close()
    return results


def worker_main(args: argparse.Namespace) -> None:
    if args.loop == "uvloop":
        import uvloop

        results = uvloop.run(run_worker(args))
    else:
        results = asyncio.run(run_worker(args))
    print(json.dumps(results))


# -- servers --------------------------------------------------------------------------------


class ReplayServer:
    """benchmarks/replay_server.py in its own process."""

    def __enter__(self) -> ReplayServer:
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "benchmarks" / "replay_server.py"), "--port", "0"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.port = int(line.split()[1])
        self.uri = f"mongodb://127.0.0.1:{self.port}/?directConnection=true"
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait(10)


def replay_capacity(
    port: int, seconds: float = 2.0, connections: int = 4, depth: int = 32
) -> float:
    """Requests/s the replay server answers to a raw, pipelined client (no driver)."""
    body = b"\x13hello\x00\x01\x00" + b"\x02$db\x00\x06\x00\x00\x00admin\x00"
    body = struct.pack("<i", len(body) + 5) + body + b"\x00"
    message = struct.pack("<iiii", 16 + 5 + len(body), 1, 0, 2013) + b"\x00\x00\x00\x00\x00" + body
    counts = [0] * connections
    deadline = time.perf_counter() + seconds

    def client(k: int) -> None:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        reply_size = None
        pending = bytearray()
        while time.perf_counter() < deadline:
            sock.sendall(message * depth)
            expected = depth
            while expected:
                pending += sock.recv(1 << 20)
                if reply_size is None and len(pending) >= 4:
                    reply_size = struct.unpack_from("<i", pending)[0]
                assert reply_size is not None
                done = min(expected, len(pending) // reply_size)
                del pending[: done * reply_size]
                expected -= done
            counts[k] += depth
        sock.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(connections)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts) / (time.perf_counter() - start)


def run_server(
    server_name: str, uri: str, args: argparse.Namespace, ops: int
) -> dict[tuple[str, str], dict[str, Any]]:
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for driver in args.drivers:
        for loop in args.loops if driver != "pymongo-sync" else ("-",):
            command = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--worker",
                "--driver",
                driver,
                "--loop",
                loop if loop != "-" else "asyncio",
                "--uri",
                uri,
                "--ops",
                str(ops),
                "--iterations",
                str(args.iterations),
            ]
            if args.tasks:
                command += ["--tasks", ",".join(args.tasks)]
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                check=False,
            )
            if done.returncode != 0:
                print(
                    f"{server_name} {driver}/{loop} failed:\n{done.stderr[-3000:]}", file=sys.stderr
                )
                continue
            results[(driver, loop)] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"  {server_name}: {driver}/{loop} done", file=sys.stderr)
    return results


def table(server: str, results: dict[tuple[str, str], dict[str, Any]], markdown: bool) -> str:
    lines = []
    header = (
        "task",
        "driver",
        "loop",
        "rate/s",
        "CPU us/op",
        "CPU vs PyMongo async",
        "CPU vs PyMongo sync",
        "rate vs PyMongo async",
    )
    if markdown:
        lines.append(f"\n**{server}**\n")
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
    else:
        lines.append(f"\n== {server}")
        lines.append(
            "{:22} {:14} {:8} {:>10} {:>10} {:>10} {:>10} {:>10}".format(
                *header[:5], "vs async", "vs sync", "rate x"
            )
        )
    tasks = [name for name, _ in TASKS if any(name in r for r in results.values())]
    for task in tasks:
        sync = results.get(("pymongo-sync", "-"), {}).get(task)
        for (driver, loop), by_task in results.items():
            row = by_task.get(task)
            if row is None:
                continue
            peer = results.get(("pymongo-async", loop), {}).get(task)
            versus_async = peer is not None and driver != "pymongo-async" and loop != "-"
            versus_sync = sync is not None and driver != "pymongo-sync"
            vs_async = f"{row['cpu_us'] / peer['cpu_us']:.2f}" if versus_async and peer else ""
            vs_sync = f"{row['cpu_us'] / sync['cpu_us']:.2f}" if versus_sync and sync else ""
            rate_x = f"{row['rate'] / peer['rate']:.2f}" if versus_async and peer else ""
            cells = (
                task,
                driver,
                loop,
                f"{row['rate']:.0f}",
                f"{row['cpu_us']:.0f}",
                vs_async,
                vs_sync,
                rate_x,
            )
            if markdown:
                lines.append("| " + " | ".join(cells) + " |")
            else:
                lines.append("{:22} {:14} {:8} {:>10} {:>10} {:>10} {:>10} {:>10}".format(*cells))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--driver", default="asyncmongo", help=argparse.SUPPRESS)
    parser.add_argument("--loop", default="asyncio", help=argparse.SUPPRESS)
    parser.add_argument("--uri", default="", help=argparse.SUPPRESS)
    parser.add_argument("--servers", default="replay,jongodb")
    parser.add_argument("--drivers", default=",".join(DRIVERS))
    parser.add_argument("--loops", default=",".join(LOOPS))
    parser.add_argument("--tasks", default="")
    parser.add_argument("--ops", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    args.tasks = [t for t in args.tasks.split(",") if t]
    if args.worker:
        worker_main(args)
        return
    args.drivers = args.drivers.split(",")
    args.loops = args.loops.split(",")
    output = []
    for server in args.servers.split(","):
        if server == "replay":
            with ReplayServer() as replay:
                capacity = replay_capacity(replay.port)
                results = run_server("replay", replay.uri, args, args.ops or 5000)
            fastest = max(
                (
                    r["rate"]
                    for by in results.values()
                    for t, r in by.items()
                    if t in SINGLE_DOC_TASKS or t.endswith("100_tasks")
                ),
                default=0.0,
            )
            output.append(table("replay server", results, args.markdown))
            output.append(
                f"\nreplay server capacity (raw pipelined client): {capacity:,.0f} "
                f"req/s = {capacity / max(fastest, 1):.1f}x the fastest driver rate "
                f"({fastest:,.0f}/s)"
            )
        elif server == "jongodb":
            sys.path.insert(0, str(ROOT))
            from tests.support.jongodb import JongodbServer, unavailable_reason

            reason = unavailable_reason()
            if reason:
                output.append(f"\njongodb skipped: {reason}")
                continue
            with JongodbServer() as jongodb:
                results = run_server("jongodb", jongodb.uri, args, args.ops or 500)
            output.append(table("jongodb", results, args.markdown))
    print("\n".join(output))


if __name__ == "__main__":
    main()
