"""Checkout + checkin throughput of the CMAP pool, with no network I/O.

A pool of 10 fake connections (maxPoolSize=10, already established) serves 1, 100 and 1,000
concurrent tasks. One cycle is ``async with pool.checkout(): await asyncio.sleep(0)``: the
checkout, one turn of the event loop standing in for the operation, and the checkin. With more
than 10 tasks, 90% / 99% of checkouts queue and are woken by a checkin. The "bare" row has one
task and no yield: the pool's own cost per cycle; "no pool" is the bare ``sleep(0)`` for
comparison. Run on asyncio and uvloop:

    python benchmarks/pool_bench.py [--cycles N]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable

from asyncmongo.core.cmap.options import PoolOptions
from asyncmongo.runtime.pool import Pool

POOL_SIZE = 10


class _Conn:
    __slots__ = ("closed", "id", "service_id")

    def __init__(self, connection_id: int) -> None:
        self.id = connection_id
        self.service_id = None
        self.closed = False

    @property
    def is_closed(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


async def _establish(connection_id: int) -> _Conn:
    return _Conn(connection_id)


async def _warm_pool() -> Pool[_Conn]:
    pool = Pool(("bench", 27017), PoolOptions(max_pool_size=POOL_SIZE), _establish)
    pool.ready()
    held = [await pool.check_out() for _ in range(POOL_SIZE)]
    for conn in held:
        pool.check_in(conn)
    return pool


async def _run(tasks: int, cycles: int, yield_in_op: bool) -> float:
    """Seconds for ``cycles`` checkout/checkin cycles spread over ``tasks`` tasks."""
    pool = await _warm_pool()
    per_task = cycles // tasks

    async def worker() -> None:
        for _ in range(per_task):
            async with pool.checkout():
                if yield_in_op:
                    await asyncio.sleep(0)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(tasks)))
    elapsed = time.perf_counter() - start
    assert pool.statistics().in_use == 0
    await pool.close()
    return elapsed


async def _baseline(cycles: int) -> float:
    """The same loop without the pool: what one ``asyncio.sleep(0)`` costs."""
    start = time.perf_counter()
    for _ in range(cycles):
        await asyncio.sleep(0)
    return time.perf_counter() - start


def _loops() -> list[tuple[str, Callable[[], asyncio.AbstractEventLoop]]]:
    loops: list[tuple[str, Callable[[], asyncio.AbstractEventLoop]]] = [
        ("asyncio", asyncio.new_event_loop)
    ]
    try:
        import uvloop
    except ImportError:
        return loops
    loops.append(("uvloop", uvloop.new_event_loop))
    return loops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=200_000)
    args = parser.parse_args()
    rows = [("bare", 1, False), ("1 task", 1, True), ("100 tasks", 100, True)]
    rows.append(("1,000 tasks", 1000, True))
    print(f"pool of {POOL_SIZE}, {args.cycles:,} cycles per row, best of 5")
    print(f"{'loop':8} {'concurrency':12} {'cycles/s':>12} {'us/cycle':>9}")
    for loop_name, factory in _loops():
        best = float("inf")
        for _ in range(5):
            with asyncio.Runner(loop_factory=factory) as runner:
                best = min(best, runner.run(_baseline(args.cycles)))
        no_pool = f"{args.cycles / best:12,.0f} {best / args.cycles * 1e6:9.2f}"
        print(f"{loop_name:8} {'no pool':12} {no_pool}  (sleep(0) alone)")
        for label, tasks, yield_in_op in rows:
            best = float("inf")
            for _ in range(5):
                with asyncio.Runner(loop_factory=factory) as runner:
                    best = min(best, runner.run(_run(tasks, args.cycles, yield_in_op)))
            cycles = args.cycles // tasks * tasks
            print(f"{loop_name:8} {label:12} {cycles / best:12,.0f} {best / cycles * 1e6:9.2f}")


if __name__ == "__main__":
    main()
