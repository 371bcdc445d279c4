"""The adversity harness: many tasks doing retryable writes and reads through fault proxies
while a chaos task breaks random connections, then the invariants.

Invariants, checked on every run:

- no acknowledged write lost (read back directly from the simulator's store, and by the
  tasks themselves right after acknowledgement);
- no retried write applied twice (a counter's ``$inc`` total stays within acknowledged +
  unknown-outcome attempts; a fresh ``_id`` never meets DuplicateKeyError; a transaction's
  two documents exist both or neither);
- no operation runs past its deadline (timeoutMS) + 1 s (``with_transaction``: 2 x timeoutMS
  + 1 s, as the CSOT spec refreshes timeoutMS for the abortTransaction after a timeout);
- only asyncmongo's error classes surface;
- after ``close()``: no task, no socket (every proxy link closed) and no ResourceWarning.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import ssl
import time
import warnings
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvloop

from asyncmongo import AsyncMongoClient
from asyncmongo.errors import DuplicateKeyError, MongoError
from asyncmongo.testing import LoadBalanced, ReplicaSet, ShardedCluster
from asyncmongo.testing.proxy import FaultProxy
from tests.support.certs import generate

TIMEOUT_MS = 3000
SLACK_S = 1.0
DB = "adversity"


@dataclass(frozen=True)
class Variant:
    """One configuration the workload runs under."""

    name: str
    topology: str = "replset"  # replset | sharded | lb
    tls: bool = False
    compressor: str | None = None
    auth: bool = False
    uvloop: bool = False
    transactions: bool = False
    change_stream: bool = False

    def __str__(self) -> str:
        return self.name


@dataclass
class Ledger:
    """What the tasks saw: acknowledged and unknown-outcome writes, and every violation."""

    acked: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)
    #: Every insert sent, before its outcome is known (a change event may come first).
    attempted: set[str] = field(default_factory=set)
    acked_incs: Counter[str] = field(default_factory=Counter)
    unknown_incs: Counter[str] = field(default_factory=Counter)
    txn_acked: set[str] = field(default_factory=set)
    txn_unknown: set[str] = field(default_factory=set)
    errors: Counter[str] = field(default_factory=Counter)
    operations: int = 0
    violations: list[str] = field(default_factory=list)
    longest_s: float = 0.0
    faults: Counter[str] = field(default_factory=Counter)
    change_events: int = 0

    def summary(self) -> str:
        return (f"{self.operations} ops, {len(self.acked)} acked inserts, "
                f"{sum(self.acked_incs.values())} acked incs, {len(self.txn_acked)} txns, "
                f"{self.change_events} change events, longest {self.longest_s:.2f} s, "
                f"errors {dict(self.errors)}, faults {dict(self.faults)}")


def run(variant: Variant, *, seconds: float, tasks: int, tmp_path: Path, seed: int) -> Ledger:
    """Run the scenario on a fresh event loop (uvloop when the variant says so)."""
    factory = uvloop.new_event_loop if variant.uvloop else asyncio.new_event_loop
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with asyncio.Runner(loop_factory=factory) as runner:
            ledger = runner.run(_scenario(variant, seconds, tasks, tmp_path, seed))
        gc.collect()
    for warning in caught:
        if issubclass(warning.category, ResourceWarning):
            ledger.violations.append(f"ResourceWarning: {warning.message}")
    return ledger


def _deployment(variant: Variant, tls: ssl.SSLContext | None, users: dict[str, str]) -> Any:
    if variant.topology == "sharded":
        return ShardedCluster(2, fault_proxy=True, tls=tls, users=users)
    if variant.topology == "lb":
        return LoadBalanced(fault_proxy=True, tls=tls, users=users)
    return ReplicaSet(3, fault_proxy=True, tls=tls, users=users)


async def _scenario(variant: Variant, seconds: float, tasks: int, tmp_path: Path,
                    seed: int) -> Ledger:
    rng = random.Random(seed)
    ledger = Ledger()
    certs = generate(tmp_path) if variant.tls else None
    users = {"ann": "pw"} if variant.auth else {}
    options: dict[str, Any] = {"timeoutMS": TIMEOUT_MS, "connectTimeoutMS": 1000,
                               "retryWrites": True, "retryReads": True}
    if certs is not None:
        options["tlsCAFile"] = str(certs.ca)
    if variant.compressor:
        options["compressors"] = variant.compressor
    if variant.auth:
        options.update(username="ann", password="pw")
    baseline = asyncio.all_tasks()
    deployment = _deployment(variant, certs.server_context() if certs else None, users)
    async with deployment:
        baseline = asyncio.all_tasks()
        client = AsyncMongoClient(deployment.uri, **options)
        try:
            await client[DB].c.insert_one({"_id": "warm-up"})
            ledger.acked.add("warm-up")
            stop = asyncio.Event()
            async with asyncio.TaskGroup() as group:
                for index in range(tasks):
                    group.create_task(_worker(client, variant, index, ledger, stop,
                                              random.Random(rng.random())))
                if variant.change_stream:
                    group.create_task(_watcher(client, ledger, stop))
                group.create_task(_chaos(deployment, variant, ledger, stop,
                                         random.Random(rng.random())))
                await asyncio.sleep(seconds)
                stop.set()
            await deployment.heal_network()
        finally:
            await client.close()
        await _check_closed(deployment, baseline, ledger)
        _check_store(deployment, ledger)
    return ledger


async def _timed(ledger: Ledger, what: str, operation: Awaitable[Any], *,
                 budget_s: float = TIMEOUT_MS / 1000) -> Any:
    """Await one operation: time it against the deadline; an error outside asyncmongo's
    hierarchy is a violation (and re-raised as is)."""
    start = time.monotonic()
    try:
        return await operation
    except MongoError as exc:
        ledger.errors[type(exc).__name__] += 1
        raise
    except BaseException as exc:
        if not isinstance(exc, asyncio.CancelledError):
            ledger.violations.append(f"{what}: foreign error {type(exc).__name__}: {exc}")
        raise
    finally:
        elapsed = time.monotonic() - start
        ledger.operations += 1
        ledger.longest_s = max(ledger.longest_s, elapsed)
        if elapsed > budget_s + SLACK_S:
            ledger.violations.append(f"{what} took {elapsed:.2f} s (deadline {budget_s} s)")


async def _worker(client: AsyncMongoClient, variant: Variant, index: int, ledger: Ledger,
                  stop: asyncio.Event, rng: random.Random) -> None:
    coll = client[DB].c
    counter = f"ctr-{index}"
    sequence = 0
    actions: list[Callable[[], Awaitable[None]]] = []

    async def insert() -> None:
        nonlocal sequence
        sequence += 1
        doc_id = f"t{index}-{sequence}"
        ledger.attempted.add(doc_id)
        try:
            await _timed(ledger, "insert", coll.insert_one({"_id": doc_id, "task": index}))
        except DuplicateKeyError:
            ledger.violations.append(f"insert {doc_id} applied twice (DuplicateKeyError)")
        except MongoError:
            ledger.unknown.add(doc_id)
            return
        ledger.acked.add(doc_id)
        found = await _timed(ledger, "read-back", coll.find_one({"_id": doc_id}))
        if found is None:
            ledger.violations.append(f"acknowledged insert {doc_id} not found")

    async def increment() -> None:
        try:
            await _timed(ledger, "inc", coll.update_one({"_id": counter}, {"$inc": {"n": 1}},
                                                        upsert=True))
        except MongoError:
            ledger.unknown_incs[counter] += 1
            return
        ledger.acked_incs[counter] += 1

    async def scan() -> None:
        cursor = coll.find({"task": index}).batch_size(2).limit(7)  # getMore on the way
        documents = await _timed(ledger, "scan", cursor.to_list(None))
        phantoms = {d["_id"] for d in documents} - ledger.acked - ledger.unknown
        if phantoms:
            ledger.violations.append(f"scan saw writes never made: {sorted(phantoms)[:3]}")

    async def transaction() -> None:
        nonlocal sequence
        sequence += 1
        pair = f"x{index}-{sequence}"

        async def body(session: Any) -> None:
            await coll.insert_one({"_id": f"{pair}-a", "txn": pair}, session=session)
            await coll.insert_one({"_id": f"{pair}-b", "txn": pair}, session=session)

        async with client.start_session() as session:
            try:
                await _timed(ledger, "transaction", session.with_transaction(body),
                             budget_s=2 * TIMEOUT_MS / 1000)
            except MongoError:
                ledger.txn_unknown.add(pair)
                return
        ledger.txn_acked.add(pair)

    actions += [insert, insert, increment, scan]
    if variant.transactions:
        actions.append(transaction)
    while not stop.is_set():
        with contextlib.suppress(MongoError):
            await rng.choice(actions)()
        await asyncio.sleep(rng.uniform(0, 0.02))


async def _watcher(client: AsyncMongoClient, ledger: Ledger, stop: asyncio.Event) -> None:
    """A change stream across the faults: it resumes by itself; it may be reopened after an
    error that ends it, and never sees an insert nobody made."""
    while not stop.is_set():
        try:
            async with await _timed(ledger, "watch", client[DB].c.watch(
                    [{"$match": {"operationType": "insert"}}], max_await_time_ms=200)) as stream:
                while not stop.is_set():
                    event = await _timed(ledger, "change", stream.try_next())
                    if event is None:
                        continue
                    ledger.change_events += 1
                    doc_id = event["documentKey"]["_id"]
                    if isinstance(doc_id, str) and doc_id.startswith("t") and (
                            doc_id not in ledger.attempted):
                        ledger.violations.append(f"change event for unmade insert {doc_id}")
        except MongoError:
            await asyncio.sleep(0.05)


async def _chaos(deployment: Any, variant: Variant, ledger: Ledger, stop: asyncio.Event,
                 rng: random.Random) -> None:
    """Every 50-150 ms, one fault on random connections of a random member (monitors'
    connections included), or a step down. Faults that hit connections opened later are
    avoided: see test_timeout_ms_bounds_a_new_connection_into_a_blackhole."""
    proxies: list[FaultProxy] = deployment.proxies
    while not stop.is_set():
        await asyncio.sleep(rng.uniform(0.05, 0.15))
        proxy = rng.choice(proxies)
        links = proxy.links
        if not links:
            continue
        victims = rng.sample(links, min(len(links), rng.randint(1, 3)))
        kinds = ["reset", "reset", "truncate", "corrupt", "misdirect", "latency", "drip",
                 "blackhole"]
        if isinstance(deployment, ReplicaSet):
            kinds += ["stepdown", "member-partition", "secondary-partition"]
        kind = rng.choice(kinds)
        ledger.faults[kind] += 1
        if kind == "member-partition":  # the primary cut off from the set: an election
            primary = deployment.primary
            if primary is not None:
                async with await deployment.partition_members([primary]):
                    await asyncio.sleep(rng.uniform(0.1, 0.4))
        elif kind == "secondary-partition":
            # The driver cut off from a secondary, new connections too (only monitors and
            # secondary reads go there, so operations keep their deadlines).
            secondaries = deployment.secondaries
            if secondaries and secondaries[0].proxy is not None:
                async with secondaries[0].proxy.partition():
                    await asyncio.sleep(rng.uniform(0.2, 0.6))
        elif kind == "reset":
            await proxy.reset(connections=victims).heal()
        elif kind in ("truncate", "corrupt", "misdirect"):
            getattr(proxy, kind)(count=1, connections=victims)
        elif kind == "stepdown":
            await deployment.step_down()
        else:
            fault = (proxy.latency(rng.uniform(10, 80), jitter_ms=20) if kind == "latency"
                     else proxy.drip(chunk=64, interval_ms=1, connections=victims)
                     if kind == "drip" else proxy.blackhole(connections=victims))
            await asyncio.sleep(rng.uniform(0.1, 0.4))
            await fault.heal()


async def _check_closed(deployment: Any, baseline: set[asyncio.Task[Any]],
                        ledger: Ledger) -> None:
    """After close: every driver socket closed (each went through a proxy), no task left."""
    current = asyncio.current_task()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        links = [link for proxy in deployment.proxies for link in proxy.links]
        extra = {task for task in asyncio.all_tasks() - baseline - {current}
                 if not _simulators(task)}
        if not links and not extra:
            return
        await asyncio.sleep(0.05)
    if links:
        ledger.violations.append(f"{len(links)} sockets open after close: {links[:3]}")
    if extra:
        ledger.violations.append(f"{len(extra)} tasks left after close: {list(extra)[:3]}")


def _simulators(task: asyncio.Task[Any]) -> bool:
    """A task of the simulated deployment (a member still answering an awaitable hello for
    up to maxAwaitTimeMS after the driver hung up), not the driver's."""
    code = getattr(task.get_coro(), "cr_code", None)
    if code is None:
        return False
    return "/asyncmongo/testing/" in code.co_filename or code.co_qualname == "Event.wait"


def _stored(deployment: Any) -> dict[Any, dict[str, Any]]:
    reply = deployment.store.handle(DB, {"find": "c", "filter": {}, "batchSize": 10**9})
    return {doc["_id"]: doc for doc in reply["cursor"]["firstBatch"]}


def _check_store(deployment: Any, ledger: Ledger) -> None:
    stored = _stored(deployment)
    lost = ledger.acked - stored.keys()
    if lost:
        ledger.violations.append(f"{len(lost)} acknowledged inserts lost: {sorted(lost)[:5]}")
    phantoms = {i for i in stored if isinstance(i, str) and i.startswith("t")} - (
        ledger.acked | ledger.unknown)
    if phantoms:
        ledger.violations.append(f"inserts nobody made: {sorted(phantoms)[:5]}")
    for counter in ledger.acked_incs.keys() | ledger.unknown_incs.keys():
        n = stored.get(counter, {}).get("n", 0)
        low, high = ledger.acked_incs[counter], ledger.acked_incs[counter] + (
            ledger.unknown_incs[counter])
        if not low <= n <= high:
            ledger.violations.append(f"{counter}: n={n}, acknowledged {low}, at most {high}")
    for pair in ledger.txn_acked | ledger.txn_unknown:
        halves = {f"{pair}-a" in stored, f"{pair}-b" in stored}
        if len(halves) != 1:
            ledger.violations.append(f"transaction {pair} half applied")
        elif pair in ledger.txn_acked and halves != {True}:
            ledger.violations.append(f"acknowledged transaction {pair} lost")
