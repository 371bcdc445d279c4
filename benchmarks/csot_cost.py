"""What timeoutMS costs per find_one (issue #16: within 5% of the figure without it).

driver_bench.py's ``asyncmongo-timeoutMS`` row measures the same thing, but as two rows
timed seconds apart: on a shared 2-core machine the noise between them (often ±10%) is
larger than the effect. This script measures it so that noise cancels out:

- **paired CPU**: two clients in one process and one event loop, one with timeoutMS and one
  without, against the replay server (its own process). They take turns, a short batch of
  find_one by ``_id`` each; every pair of batches gives one ratio of client CPU per op
  (``time.process_time``), and the report is the median ratio over all pairs, with the
  floor client's figure in the same run for scale.
- **bytecodes**: the Python bytecodes each client runs per find_one (``sys.settrace`` with
  opcode events), a count that no load changes.

    PYTHONPATH=. python benchmarks/csot_cost.py [--pairs 60] [--batch 300] [--loop uvloop]
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
from floor_client import FloorClient

import asyncmongo

#: The client's timeoutMS: long enough never to fire, so only its bookkeeping is measured.
TIMEOUT_MS = 10_000

FindOne = Callable[[], Awaitable[Any]]


async def bytecodes_per_op(find_one: FindOne, ops: int = 100) -> int:
    """Python bytecodes executed per find_one (all frames entered while it runs, the event
    loop's callbacks included; ``find_one`` is already warm)."""
    counts = await count(find_one, ops=ops, warmup=0)
    return sum(counts.values()) // ops


async def measure(uri: str, pairs: int, batch: int) -> None:
    plain = asyncmongo.AsyncMongoClient(uri)
    timed = asyncmongo.AsyncMongoClient(uri, timeoutMS=TIMEOUT_MS)
    floor = await FloorClient.connect(uri)
    try:
        plain_corpus, timed_corpus = plain.perftest.corpus, timed.perftest.corpus
        calls: dict[str, FindOne] = {
            "asyncmongo": lambda: plain_corpus.find_one({"_id": 1}),
            "asyncmongo-timeoutMS": lambda: timed_corpus.find_one({"_id": 1}),
            "floor": lambda: floor.find_one("perftest", "corpus", {"_id": 1}),
        }
        samples = await paired_cpu(calls, pairs, batch)
        ratios = paired_ratios(samples["asyncmongo-timeoutMS"], samples["asyncmongo"])
        codes = {name: await bytecodes_per_op(call) for name, call in calls.items()}
    finally:
        await plain.close()
        await timed.close()
        floor.close()
    print(f"find one by _id, {pairs} pairs of {batch} ops, timeoutMS={TIMEOUT_MS}\n")
    print("| client | CPU µs/op (median) | bytecodes/op | vs floor (bytecodes) |")
    print("|---|---:|---:|---:|")
    for name in calls:
        print(f"| {name} | {statistics.median(samples[name]):.1f} | {codes[name]} "
              f"| {codes[name] / codes['floor']:.2f}x |")
    extra_cpu = statistics.median(ratios) - 1
    quartiles = statistics.quantiles(ratios, n=4)
    extra_codes = codes["asyncmongo-timeoutMS"] / codes["asyncmongo"] - 1
    print(f"\ntimeoutMS costs {extra_cpu:+.1%} CPU per op (median of paired ratios; "
          f"quartiles {quartiles[0] - 1:+.1%} .. {quartiles[2] - 1:+.1%}) and "
          f"{extra_codes:+.1%} bytecodes; target: within +5%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--batch", type=int, default=300)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    args = parser.parse_args()
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    with ReplayServer(find_many=0) as server, asyncio.Runner(loop_factory=factory) as runner:
        runner.run(measure(server.uri, args.pairs, args.batch))


if __name__ == "__main__":
    main()
