"""``python -m asyncmongo.testing [standalone|replset N|sharded N|lb]``: start a simulated
deployment on 127.0.0.1, print its URI, and run until Ctrl-C (for manual use and demos).

``--fault-proxy`` puts every member behind a fault proxy; ``--control-port N`` (0: any free
port) opens the control port (:mod:`asyncmongo.testing.control`) and prints
``control 127.0.0.1:<port>`` on the line after the URI."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence

from asyncmongo.testing.control import ControlServer
from asyncmongo.testing.deployment import LoadBalanced, ReplicaSet, ShardedCluster, Standalone

_KINDS = ("standalone", "replset", "sharded", "lb")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m asyncmongo.testing",
        description="Run a simulated MongoDB deployment until Ctrl-C.")
    parser.add_argument("kind", nargs="?", default="standalone", choices=_KINDS)
    parser.add_argument("count", nargs="?", type=int, default=None,
                        help="members (replset, default 3) or mongos (sharded, default 2)")
    parser.add_argument("--port", type=int, default=0, help="standalone port (default: any)")
    parser.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD",
                        help="a SCRAM user in admin (repeatable)")
    parser.add_argument("--no-streaming", action="store_true",
                        help="omit topologyVersion so drivers poll")
    parser.add_argument("--fault-proxy", action="store_true",
                        help="put every member behind a fault proxy (network faults)")
    parser.add_argument("--control-port", type=int, default=None, metavar="PORT",
                        help="open the control port (0: any free port) and print it")
    return parser.parse_args(argv)


def build(args: argparse.Namespace) -> Standalone | ReplicaSet | ShardedCluster | LoadBalanced:
    users = dict(entry.split(":", 1) for entry in args.user)
    streaming = not args.no_streaming
    proxy = args.fault_proxy
    if args.kind == "replset":
        return ReplicaSet(args.count or 3, users=users, streaming=streaming, fault_proxy=proxy)
    if args.kind == "sharded":
        return ShardedCluster(args.count or 2, users=users, streaming=streaming,
                              fault_proxy=proxy)
    if args.kind == "lb":
        return LoadBalanced(users=users, fault_proxy=proxy)
    return Standalone(port=args.port, users=users, streaming=streaming, fault_proxy=proxy)


async def serve(args: argparse.Namespace, ready: asyncio.Event | None = None) -> None:
    """Run the deployment until cancelled."""
    async with build(args) as deployment, contextlib.AsyncExitStack() as stack:
        print(deployment.uri, flush=True)
        if args.control_port is not None:
            control = ControlServer(deployment, port=args.control_port)
            await stack.enter_async_context(control)
            print(f"control {control.address}", flush=True)
        if ready is not None:
            ready.set()
        await asyncio.Event().wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
