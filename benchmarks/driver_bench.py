"""Driver benchmarks: asyncmongo side by side with PyMongo and with the floor, in one run.

The single- and multi-document tasks of the MongoDB benchmarking spec (specs/benchmarking):
run command, find one by _id, small/large doc insert_one, find many and empty the cursor,
small/large doc bulk insert (insert_many); plus find_one by _id and insert_one from 100
concurrent tasks. Drivers: asyncmongo and PyMongo's ``AsyncMongoClient`` on asyncio and on
uvloop, and synchronous PyMongo ``MongoClient`` (its "concurrent" tasks use 100 threads).

The floor (benchmarks/floor_client.py, on asyncio and on uvloop, for run command, find one by
_id and small doc insert_one) is a bare asyncio Protocol client that encodes the command
document asyncmongo sends, writes one OP_MSG, awaits the reply on a future resolved from
``data_received`` and decodes it: the least any asyncio driver does. The last table gives
asyncmongo's client CPU per operation over the floor's for every server and loop, with the
range of the per-repeat ratios (each repeat runs every driver back to back), beside the
PyMongo ratios; the target is <= 1.3x.

Servers: the replay server (benchmarks/replay_server.py, its own process, canned replies, so
the client is the bottleneck; its ceiling is probed with a raw pipelined socket client and
printed) and jongodb (an independent server; slow, so it bounds throughput and the client
CPU per operation is the figure to read there).

For each cell: the median over the repeats of the rate (ops/s; documents/s for the
multi-document tasks, and MB/s by the spec's dataset sizes) and of the client's own CPU time
per operation (``time.process_time`` around the timed section: this process's CPU only, all
its threads); ratios against PyMongo async (same loop) and sync. The whole run takes a few
minutes; ``--quick`` is a short smoke run. Run it from the repository root with that root
first on ``PYTHONPATH`` so the asyncmongo measured is this checkout's (the header prints the
path imported):

    PYTHONPATH=. python benchmarks/driver_bench.py [--quick] [--server replay|jongodb|both]
        [--task NAME ...] [--driver asyncmongo|asyncmongo-compat|floor|pymongo-async|...]
        [--loop asyncio|uvloop|threads ...] [--repeats N] [--scale X]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymongo
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_support import (
    DataSets,
    ReplayServer,
    Result,
    Sample,
    jongodb_server,
    load_data,
    probe_replay_rate,
    ratio,
    timed,
)
from floor_client import FloorClient

import asyncmongo
import asyncmongo.compat as asyncmongo_compat

CONCURRENCY = 100
#: A fresh target collection per run (jongodb has no drop, and slows as a collection grows).
_RUNS = itertools.count()
HELLO_BYTES = 13  # the spec scores run command as 13 bytes per {hello: true}


#: asyncmongo with timeoutMS on the client: the cost of one deadline per operation
#: (maxTimeMS, the timed read), for find one by _id; the target is within 5% of asyncmongo.
#: Rows timed apart are noisier than that on a shared machine: benchmarks/csot_cost.py
#: measures the same cost as paired ratios.
CSOT_DRIVER = "asyncmongo-timeoutMS"
CSOT_KINDS = frozenset({"find_one"})
CSOT_TIMEOUT_MS = 10_000


@dataclass(frozen=True, slots=True)
class Combo:
    """A driver on an event loop ("threads" for synchronous PyMongo)."""

    driver: str
    loop: str

    @property
    def label(self) -> str:
        return f"{self.driver} ({self.loop})"


COMBOS = (
    Combo("floor", "asyncio"),
    Combo("asyncmongo", "asyncio"),
    # The PyMongo-compatible client (asyncmongo.compat): the same engine handing back
    # PyMongo's types; its row shows what the compatibility costs.
    Combo("asyncmongo-compat", "asyncio"),
    Combo(CSOT_DRIVER, "asyncio"),
    Combo("pymongo-async", "asyncio"),
    Combo("floor", "uvloop"),
    Combo("asyncmongo", "uvloop"),
    Combo("pymongo-async", "uvloop"),
    Combo("pymongo-sync", "threads"),
)
#: The task kinds the floor runs: one request, one reply, per operation.
FLOOR_KINDS = frozenset({"command", "find_one", "insert_small"})
#: asyncmongo's client CPU per operation over the floor's: the target, per task and loop.
FLOOR_TARGET = 1.3


@dataclass(frozen=True, slots=True)
class Task:
    """One benchmark task; ``ops`` counts operations (documents for multi-document tasks)."""

    name: str
    kind: str
    single: bool  # a single-document task: the CPU targets apply
    replay_ops: int
    jongodb_ops: int

    def ops(self, server: str, scale: float) -> int:
        base = self.replay_ops if server == "replay" else self.jongodb_ops
        return max(1, int(base * scale))

    def runs(self, combo: Combo) -> bool:
        """Whether ``combo`` has this task (the floor has only the single-request ones)."""
        if combo.driver == CSOT_DRIVER:
            return self.kind in CSOT_KINDS
        return combo.driver != "floor" or self.kind in FLOOR_KINDS


#: Operations per timed run against (replay server, jongodb): the spec's 10,000 scaled down
#: so five interleaved repeats of everything take about five minutes on a shared machine.
TASKS = (
    Task("run command", "command", True, 3000, 300),
    Task("find one by _id", "find_one", True, 3000, 200),
    Task("small doc insert_one", "insert_small", True, 3000, 300),
    Task("large doc insert_one", "insert_large", True, 10, 2),
    Task("find many, empty cursor", "find_many", False, 10_000, 1000),
    Task("small doc bulk insert", "bulk_small", False, 10_000, 2000),
    Task("large doc bulk insert", "bulk_large", False, 10, 2),
    Task("find_one x100 tasks", "c_find_one", True, 6000, 300),
    Task("insert_one x100 tasks", "c_insert_small", True, 6000, 300),
)


def bytes_per_op(task: Task, data: DataSets) -> int:
    if task.kind == "command":
        return HELLO_BYTES
    if task.kind in ("find_one", "find_many", "c_find_one"):
        return data.tweet_bytes
    if task.kind.endswith("large"):
        return data.large_bytes
    return data.small_bytes


@dataclass(slots=True)
class Cell:
    """Inputs of one timed run."""

    task: Task
    ops: int
    uri: str
    data: DataSets
    server_pid: int | None
    samples: list[Sample]


def documents(cell: Cell) -> list[dict[str, Any]]:
    """Fresh copies (drivers add ``_id`` to what they insert), built outside the timing."""
    source = cell.data.large if cell.task.kind.endswith("large") else cell.data.small
    return [dict(source) for _ in range(cell.ops)]


def ids(cell: Cell, lane: int = 0, lanes: int = 1) -> range:
    return range(1 + lane, cell.ops + 1, lanes)


# --- the async drivers (asyncmongo and PyMongo's AsyncMongoClient share these names) -----


async def run_async(client: Any, cell: Cell) -> None:
    db = client.perftest
    kind = cell.task.kind
    corpus = db.corpus
    target = db[f"bench_{kind}_{next(_RUNS)}"]
    await db.command("hello", True)
    await corpus.find_one({"_id": 1})  # a pooled connection before the clock starts
    if kind == "command":
        with timed(cell.ops, cell.samples, cell.server_pid):
            for _ in range(cell.ops):
                await db.command("hello", True)
    elif kind == "find_one":
        with timed(cell.ops, cell.samples, cell.server_pid):
            for i in ids(cell):
                await corpus.find_one({"_id": i})
    elif kind in ("insert_small", "insert_large"):
        docs = documents(cell)
        with timed(cell.ops, cell.samples, cell.server_pid):
            for doc in docs:
                await target.insert_one(doc)
    elif kind == "find_many":
        many = db.corpus_many
        with timed(cell.ops, cell.samples, cell.server_pid):
            count = 0
            async for _ in many.find({}):
                count += 1
        assert count == cell.ops, f"find many returned {count} documents, not {cell.ops}"
    elif kind in ("bulk_small", "bulk_large"):
        docs = documents(cell)
        with timed(cell.ops, cell.samples, cell.server_pid):
            await target.insert_many(docs)
    elif kind == "c_find_one":
        await _concurrently(lambda lane: _find_lane(corpus, cell, lane, warm=True))
        with timed(cell.ops, cell.samples, cell.server_pid):
            await _concurrently(lambda lane: _find_lane(corpus, cell, lane, warm=False))
    elif kind == "c_insert_small":
        docs = documents(cell)
        await _concurrently(lambda lane: _find_lane(corpus, cell, lane, warm=True))
        with timed(cell.ops, cell.samples, cell.server_pid):
            await _concurrently(lambda lane: _insert_lane(target, docs[lane::CONCURRENCY]))
    else:
        raise ValueError(f"unknown task kind {kind!r}")
    if kind.endswith("large"):
        await target.delete_many({})  # jongodb keeps everything in memory; it has no drop


async def _concurrently(lane: Callable[[int], Awaitable[None]]) -> None:
    await asyncio.gather(*(lane(n) for n in range(CONCURRENCY)))


async def _find_lane(corpus: Any, cell: Cell, lane: int, *, warm: bool) -> None:
    for i in ids(cell, lane, CONCURRENCY)[: 2 if warm else None]:
        await corpus.find_one({"_id": i})


async def _insert_lane(target: Any, docs: list[dict[str, Any]]) -> None:
    for doc in docs:
        await target.insert_one(doc)


async def with_client(combo: Combo, cell: Cell) -> None:
    if combo.driver == "asyncmongo":
        client: Any = asyncmongo.AsyncMongoClient(cell.uri)
    elif combo.driver == "asyncmongo-compat":
        client = asyncmongo_compat.AsyncMongoClient(cell.uri)
    elif combo.driver == CSOT_DRIVER:
        client = asyncmongo.AsyncMongoClient(cell.uri, timeoutMS=CSOT_TIMEOUT_MS)
    else:
        client = pymongo.AsyncMongoClient(cell.uri)
    try:
        await run_async(client, cell)
    finally:
        await client.close()


# --- the floor ---------------------------------------------------------------------------


async def with_floor(cell: Cell) -> None:
    client = await FloorClient.connect(cell.uri)
    try:
        await run_floor(client, cell)
    finally:
        client.close()


async def run_floor(client: FloorClient, cell: Cell) -> None:
    """run_async's command, find_one and insert_one tasks, as the floor sends them."""
    kind = cell.task.kind
    target = f"bench_{kind}_{next(_RUNS)}"
    await client.run_command("perftest", "hello", True)
    await client.find_one("perftest", "corpus", {"_id": 1})
    if kind == "command":
        with timed(cell.ops, cell.samples, cell.server_pid):
            for _ in range(cell.ops):
                await client.run_command("perftest", "hello", True)
    elif kind == "find_one":
        with timed(cell.ops, cell.samples, cell.server_pid):
            for i in ids(cell):
                await client.find_one("perftest", "corpus", {"_id": i})
    elif kind == "insert_small":
        docs = documents(cell)
        with timed(cell.ops, cell.samples, cell.server_pid):
            for doc in docs:
                await client.insert_one("perftest", target, doc)
    else:
        raise ValueError(f"the floor has no {kind!r} task")


# --- synchronous PyMongo -----------------------------------------------------------------


def run_sync(cell: Cell) -> None:
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(cell.uri)
    try:
        _run_sync(client, cell)
    finally:
        client.close()


def _run_sync(client: pymongo.MongoClient[dict[str, Any]], cell: Cell) -> None:
    db = client.perftest
    kind = cell.task.kind
    corpus = db.corpus
    target = db[f"bench_{kind}_{next(_RUNS)}"]
    db.command("hello", True)
    corpus.find_one({"_id": 1})
    if kind == "command":
        with timed(cell.ops, cell.samples, cell.server_pid):
            for _ in range(cell.ops):
                db.command("hello", True)
    elif kind == "find_one":
        with timed(cell.ops, cell.samples, cell.server_pid):
            for i in ids(cell):
                corpus.find_one({"_id": i})
    elif kind in ("insert_small", "insert_large"):
        docs = documents(cell)
        with timed(cell.ops, cell.samples, cell.server_pid):
            for doc in docs:
                target.insert_one(doc)
    elif kind == "find_many":
        with timed(cell.ops, cell.samples, cell.server_pid):
            count = sum(1 for _ in db.corpus_many.find({}))
        assert count == cell.ops, f"find many returned {count} documents, not {cell.ops}"
    elif kind in ("bulk_small", "bulk_large"):
        docs = documents(cell)
        with timed(cell.ops, cell.samples, cell.server_pid):
            target.insert_many(docs)
    elif kind in ("c_find_one", "c_insert_small"):
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            warm = [pool.submit(corpus.find_one, {"_id": i}) for i in ids(cell)[: CONCURRENCY]]
            for future in warm:
                future.result()
            if kind == "c_find_one":
                def lane(n: int) -> None:
                    for i in ids(cell, n, CONCURRENCY):
                        corpus.find_one({"_id": i})
            else:
                docs = documents(cell)

                def lane(n: int) -> None:
                    for doc in docs[n::CONCURRENCY]:
                        target.insert_one(doc)
            with timed(cell.ops, cell.samples, cell.server_pid):
                for job in [pool.submit(lane, n) for n in range(CONCURRENCY)]:
                    job.result()
    else:
        raise ValueError(f"unknown task kind {kind!r}")
    if kind.endswith("large"):
        target.delete_many({})


def run_cell(combo: Combo, cell: Cell) -> None:
    if combo.driver == "pymongo-sync":
        run_sync(cell)
        return
    factory = uvloop.new_event_loop if combo.loop == "uvloop" else None
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(with_floor(cell) if combo.driver == "floor" else with_client(combo, cell))


# --- the run -----------------------------------------------------------------------------


def prepare_jongodb(uri: str, data: DataSets, tasks: Sequence[Task], scale: float) -> None:
    """The corpora the read tasks query: ``_id`` 1..N tweets, and the find-many collection."""
    client: pymongo.MongoClient[dict[str, Any]] = pymongo.MongoClient(uri)
    db = client.perftest
    by_id = max((t.ops("jongodb", scale) for t in tasks if "find_one" in t.kind), default=1)
    db.corpus.insert_many([dict(data.tweet, _id=i) for i in range(1, by_id + 1)])
    many = max((t.ops("jongodb", scale) for t in tasks if t.kind == "find_many"), default=0)
    if many:
        db.corpus_many.insert_many([dict(data.tweet) for _ in range(many)])
    client.close()


def run_server(name: str, uri: str, pid: int | None, data: DataSets, tasks: Sequence[Task],
               combos: Sequence[Combo], repeats: int, scale: float
               ) -> dict[tuple[str, Combo], Result]:
    results: dict[tuple[str, Combo], Result] = {}
    for task in tasks:
        ops = task.ops(name, scale)
        running = [combo for combo in combos if task.runs(combo)]
        samples: dict[Combo, list[Sample]] = {combo: [] for combo in running}
        started = time.perf_counter()
        for _ in range(repeats):
            for combo in running:  # interleaved: a noisy moment hits every driver alike
                run_cell(combo, Cell(task, ops, uri, data, pid, samples[combo]))
        for combo in running:
            results[task.name, combo] = Result.of(samples[combo], bytes_per_op(task, data))
        print(f"  {task.name}: {ops} ops x {repeats} x {len(running)} drivers "
              f"in {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    return results


def table(name: str, results: dict[tuple[str, Combo], Result], tasks: Sequence[Task],
          combos: Sequence[Combo]) -> str:
    lines = [
        f"### {name}",
        "",
        "| task | driver (loop) | ops/s | MB/s | client CPU µs/op | server CPU µs/op "
        "| CPU vs PyMongo async | CPU vs PyMongo sync | rate vs PyMongo async "
        "| rate vs PyMongo sync |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for task in tasks:
        sync = results.get((task.name, Combo("pymongo-sync", "threads")))
        for combo in combos:
            if (task.name, combo) not in results:
                continue
            mine = results[task.name, combo]
            peer = results.get((task.name, Combo("pymongo-async", combo.loop)))
            cells = ["-"] * 4
            if combo.driver.startswith("asyncmongo"):
                cells = [
                    ratio(mine.cpu_us_per_op, peer.cpu_us_per_op if peer else None),
                    ratio(mine.cpu_us_per_op, sync.cpu_us_per_op if sync else None),
                    ratio(mine.ops_per_s, peer.ops_per_s if peer else None),
                    ratio(mine.ops_per_s, sync.ops_per_s if sync else None),
                ]
            lines.append(
                f"| {task.name} | {combo.label} | {mine.ops_per_s:,.0f} | {mine.mb_per_s:.2f} "
                f"| {mine.cpu_us_per_op:.1f} | {mine.server_cpu_us_per_op:.1f} | "
                + " | ".join(cells) + " |"
            )
    return "\n".join(lines)


def verdicts(results: dict[tuple[str, Combo], Result], tasks: Sequence[Task],
             combos: Sequence[Combo], replay: bool) -> list[str]:
    """The targets, checked cell by cell."""
    out: list[str] = []
    sync = Combo("pymongo-sync", "threads")
    for task in tasks:
        for combo in combos:
            if combo.driver != "asyncmongo" or (task.name, combo) not in results:
                continue
            floor = results.get((task.name, Combo("floor", combo.loop)))
            if floor is not None:
                cpu = results[task.name, combo].cpu_us_per_op / floor.cpu_us_per_op
                out.append(f"{'ok ' if cpu <= FLOOR_TARGET else 'MISS'} {task.name} "
                           f"{combo.loop}: CPU/op {cpu:.2f}x the floor "
                           f"(target <= {FLOOR_TARGET}x)")
            peer = Combo("pymongo-async", combo.loop)
            if (task.name, peer) not in results:
                continue
            mine, theirs = results[task.name, combo], results[task.name, peer]
            if task.single:
                cpu = mine.cpu_us_per_op / theirs.cpu_us_per_op
                out.append(f"{'ok ' if cpu <= 0.67 else 'MISS'} {task.name} {combo.loop}: "
                           f"CPU/op {cpu:.2f}x PyMongo async (target <= 0.67x)")
                if (task.name, sync) in results:
                    cpu = mine.cpu_us_per_op / results[task.name, sync].cpu_us_per_op
                    out.append(f"{'ok ' if cpu <= 1.0 else 'MISS'} {task.name} {combo.loop}: "
                               f"CPU/op {cpu:.2f}x PyMongo sync (target <= 1.0x)")
            if replay and task.kind.startswith("c_"):
                rate = mine.ops_per_s / theirs.ops_per_s
                out.append(f"{'ok ' if rate >= 1.5 else 'MISS'} {task.name} {combo.loop}: "
                           f"throughput {rate:.2f}x PyMongo async (target >= 1.5x)")
    return out


def floor_table(runs: Sequence[tuple[str, dict[tuple[str, Combo], Result]]],
                tasks: Sequence[Task]) -> str:
    """asyncmongo's client CPU per operation over the floor's, for every server and loop,
    beside its ratios to PyMongo; the range is that of the per-repeat ratios."""
    lines = [
        f"### asyncmongo client CPU per operation / the floor's (target <= {FLOOR_TARGET}x)",
        "",
        "| server | task | loop | floor µs/op | asyncmongo µs/op | asyncmongo / floor "
        "| range over repeats | asyncmongo / PyMongo async | asyncmongo / PyMongo sync |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for server, results in runs:
        for task in tasks:
            sync = results.get((task.name, Combo("pymongo-sync", "threads")))
            for loop in ("asyncio", "uvloop"):
                floor = results.get((task.name, Combo("floor", loop)))
                mine = results.get((task.name, Combo("asyncmongo", loop)))
                if floor is None or mine is None:
                    continue
                peer = results.get((task.name, Combo("pymongo-async", loop)))
                each = [m / f for m, f in zip(mine.cpu_us_per_repeat, floor.cpu_us_per_repeat,
                                              strict=True)]
                lines.append(
                    f"| {server} | {task.name} | {loop} | {floor.cpu_us_per_op:.1f} "
                    f"| {mine.cpu_us_per_op:.1f} "
                    f"| {ratio(mine.cpu_us_per_op, floor.cpu_us_per_op)} "
                    f"| {min(each):.2f} to {max(each):.2f} "
                    f"| {ratio(mine.cpu_us_per_op, peer.cpu_us_per_op if peer else None)} "
                    f"| {ratio(mine.cpu_us_per_op, sync.cpu_us_per_op if sync else None)} |"
                )
    return "\n".join(lines)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # so the servers' ``with`` blocks stop them


def main(argv: Sequence[str] | None = None) -> None:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--server", choices=("replay", "jongodb", "both"), default="both")
    parser.add_argument("--task", action="append", help="run only tasks whose name has this")
    parser.add_argument("--driver", action="append", help="asyncmongo, pymongo-async, ...")
    parser.add_argument("--loop", action="append", help="asyncio, uvloop, threads")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--scale", type=float, default=None, help="multiply the op counts")
    args = parser.parse_args(argv)
    scale = args.scale if args.scale is not None else (0.2 if args.quick else 1.0)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 5)
    tasks = [t for t in TASKS if not args.task or any(p in t.name for p in args.task)]
    combos = [c for c in COMBOS if (not args.driver or c.driver in args.driver)
              and (not args.loop or c.loop in args.loop)]
    data = load_data()
    print(f"python {sys.version.split()[0]}, pymongo {pymongo.__version__}, "
          f"uvloop {getattr(uvloop, '__version__', '?')}, scale {scale}, "
          f"{repeats} repeats (median)\nasyncmongo from {Path(asyncmongo.__file__).parent}\n")
    started = time.perf_counter()
    runs: list[tuple[str, dict[tuple[str, Combo], Result]]] = []
    if args.server in ("replay", "both"):
        find_many = max((t.ops("replay", scale) for t in tasks if t.kind == "find_many"),
                        default=101)
        with ReplayServer(find_many) as server:
            ceiling = probe_replay_rate(server.port)
            print(f"replay server ceiling (raw pipelined socket, one connection): "
                  f"{ceiling:,.0f} find_one/s", flush=True)
            results = run_server("replay", server.uri, server.pid, data, tasks, combos,
                                 repeats, scale)
        runs.append(("replay", results))
        fastest = max((r.ops_per_s for (name, _), r in results.items()
                       if "find_one" in name or name == "run command"), default=0.0)
        print(f"\nreplay server ceiling / fastest driver's find_one or command rate: "
              f"{ceiling / fastest if fastest else 0.0:.1f}x\n")
        print(table("Replay server (canned replies, separate process)", results, tasks, combos))
        print("\n".join(["", *verdicts(results, tasks, combos, replay=True), ""]))
    if args.server in ("jongodb", "both"):
        with jongodb_server() as server:
            prepare_jongodb(server.uri, data, tasks, scale)
            process = getattr(server, "_process", None)  # its CPU, when it can be read
            pid = None if process is None else process.pid
            results = run_server("jongodb", server.uri, pid, data, tasks, combos,
                                 repeats, scale)
        runs.append(("jongodb", results))
        print(table("jongodb (independent server; it bounds the rate)", results, tasks,
                    combos))
        print("\n".join(["", *verdicts(results, tasks, combos, replay=False), ""]))
    if any(combo.driver == "floor" for combo in combos):
        print(floor_table(runs, tasks), end="\n\n")
    print(f"total {time.perf_counter() - started:.0f}s")


if __name__ == "__main__":
    main()
