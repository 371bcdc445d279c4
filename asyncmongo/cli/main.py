"""The argument parser, the dispatch to one command, and the one place errors are printed."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import TextIO

from asyncmongo.cli import commands
from asyncmongo.cli.watch import watch_topology
from asyncmongo.errors import MongoError

__all__ = ["build_parser", "main", "run"]

#: Exit statuses: a driver error, and Ctrl-C (128 + SIGINT, as shells report it).
EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m asyncmongo",
        description="Look at a MongoDB deployment through asyncmongo.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ping = sub.add_parser("ping", help="one ping round trip", description=(
        "Send one ping and print the round trip time and the server that answered."))
    _common(ping)

    hello = sub.add_parser("hello", help="the server's hello reply", description=(
        "Print the hello reply of the primary, or of a secondary when there is none, as relaxed "
        "Extended JSON."))
    _common(hello)

    topology = sub.add_parser("topology", help="servers, types, RTTs and pool sizes",
                              description=(
        "Print the deployment as the driver discovers it: each server's type, round trip "
        "time and connection pool. With --watch, keep printing SDAM and CMAP events as they "
        "happen, and the table after every topology change."))
    _common(topology)
    topology.add_argument("--watch", action="store_true",
                          help="keep printing events until --duration, --count or Ctrl-C")
    topology.add_argument("--duration", type=_positive_float, default=None, metavar="SECONDS",
                          help="with --watch: stop after this many seconds")
    topology.add_argument("--count", type=_positive_int, default=None, metavar="N",
                          help="with --watch: stop after printing N events")
    topology.add_argument("--verbose", action="store_true",
                          help="with --watch: also heartbeats, checkouts and check-ins")
    display = topology.add_mutually_exclusive_group()
    display.add_argument("--live", dest="live", action="store_const", const=True, default=None,
                         help="with --watch: redraw the table and the latest events in place "
                              "(the default on a terminal)")
    display.add_argument("--plain", dest="live", action="store_const", const=False,
                         help="with --watch: one line per event (the default when piped)")
    topology.add_argument("--refresh", type=_positive_float, default=0.5, metavar="SECONDS",
                          help="with --live: seconds between redraws (default 0.5)")

    bench = sub.add_parser("bench", help="a quick latency and throughput probe", description=(
        "Run an operation from several tasks at once for a while and print the throughput "
        "and latency percentiles. Read-only: ping, or find_one on --namespace."))
    _common(bench)
    bench.add_argument("--duration", type=_positive_float, default=3.0, metavar="SECONDS",
                       help="how long to run (default 3)")
    bench.add_argument("--concurrency", type=_positive_int, default=10, metavar="N",
                       help="tasks running the operation at once (default 10)")
    bench.add_argument("--op", choices=("ping", "find_one"), default="ping",
                       help="the operation (default ping)")
    bench.add_argument("--namespace", default="test.asyncmongo_bench", metavar="DB.COLL",
                       help="the collection find_one reads (default test.asyncmongo_bench)")
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("uri", metavar="URI", help="a mongodb:// or mongodb+srv:// URI")
    parser.add_argument("--timeout-ms", type=_positive_int, default=5000, metavar="MS",
                        help="serverSelectionTimeoutMS and connectTimeoutMS (default 5000)")


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {text}")
    return value


async def run(
    argv: Sequence[str], out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run one command on the running loop; returns the exit status."""
    args = build_parser().parse_args(argv)
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        if args.command == "ping":
            return await commands.ping(args, out)
        if args.command == "hello":
            return await commands.hello(args, out)
        if args.command == "topology":
            return await watch_topology(args, out)
        return await commands.bench(args, out)
    except MongoError as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=err)
        return EXIT_ERROR


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m asyncmongo``: parse, run on a new event loop, return the exit status."""
    arguments = sys.argv[1:] if argv is None else argv
    try:
        return asyncio.run(run(arguments))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
