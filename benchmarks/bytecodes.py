"""Python bytecodes per operation, by function: where a driver's own CPU goes (issue #14).

CPU per op on a shared machine moves by ±10% between runs; the number of Python bytecodes an
operation executes does not. This script counts them (``sys.settrace`` with opcode events,
every frame entered while the operation runs, the event loop's callbacks included) for
asyncmongo and for the floor client against the replay server, and lists the functions that
run the most of them.

    PYTHONPATH=. python benchmarks/bytecodes.py [--op find|insert|ping] [--top 40]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import ReplayServer
from floor_client import FloorClient

import asyncmongo

Op = Callable[[], Awaitable[Any]]
WARMUP = 300
OPS = 100


async def count(op: Op, ops: int = OPS, warmup: int = WARMUP) -> collections.Counter[str]:
    """Bytecodes per function (``file:function:line``) over ``ops`` calls of ``op``, after
    ``warmup`` calls (connected, pooled, caches filled)."""
    for _ in range(warmup):
        await op()
    counts: collections.Counter[str] = collections.Counter()

    def on_opcode(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            code = frame.f_code
            counts[f"{Path(code.co_filename).name}:{code.co_name}:{code.co_firstlineno}"] += 1
        return on_opcode

    def on_call(frame: FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        return on_opcode

    sys.settrace(on_call)
    try:
        for _ in range(ops):
            await op()
    finally:
        sys.settrace(None)
    return counts


async def measure(uri: str, name: str, top: int) -> None:
    client = asyncmongo.AsyncMongoClient(uri)
    floor = await FloorClient.connect(uri)
    corpus = client.perftest.corpus
    ops: dict[str, tuple[Op, Op]] = {
        "find": (lambda: corpus.find_one({"_id": 1}),
                 lambda: floor.find_one("perftest", "corpus", {"_id": 1})),
        "insert": (lambda: corpus.insert_one({"x": 1}),
                   lambda: floor.insert_one("perftest", "corpus", {"x": 1})),
        "ping": (lambda: client.admin.command("ping"),
                 lambda: floor.run_command("admin", "ping", 1)),
    }
    driver_op, floor_op = ops[name]
    try:
        driver = await count(driver_op)
        floor_counts = await count(floor_op)
    finally:
        await client.close()
        floor.close()
    total, floor_total = sum(driver.values()) / OPS, sum(floor_counts.values()) / OPS
    print(f"{name}: asyncmongo {total:.0f} bytecodes/op, floor {floor_total:.0f} "
          f"({total / floor_total:.2f}x)\n")
    for where, n in driver.most_common(top):
        print(f"{n / OPS:8.1f}  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=("find", "insert", "ping"), default="find")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    with ReplayServer(0) as server:
        asyncio.run(measure(server.uri, args.op, args.top))


if __name__ == "__main__":
    main()
