"""The benchmarking spec's GridFS upload and download, asyncmongo side by side with PyMongo.

Both tasks move GRIDFS_LARGE (``gridfs_large.bin``, 52,428,800 random bytes) through a
bucket of ``perftest`` on a server in a separate process that stores the chunks (the replay
server cannot): asyncmongo's simulated standalone (``python -m asyncmongo.testing``) by
default, or jongodb for the upload only (``--server jongodb``: jongodb answers the chunks'
``find`` with one 52 MB batch, past the 48 MB maxMessageSizeBytes it announces, which both
drivers reject with a ProtocolError). Upload: ``upload_from_stream`` of the whole file into a bucket
that already holds a 1-byte file (the spec's "before task"). Download: the uploaded file read
whole through ``open_download_stream``. asyncmongo's ``AsyncGridFSBucket`` takes turns with
PyMongo's async and sync buckets, each repeat in alternating order, and the table gives the
medians: the client's CPU seconds per file (what a driver spends; jongodb's time is in the
wall clock only), MB/s, and asyncmongo's CPU as a ratio of each PyMongo client's from the
same repeat.

    PYTHONPATH=. python benchmarks/gridfs_bench.py [--repeats 5] [--loop asyncio|uvloop]
        [--server simulator|jongodb]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_support import TGZ, jongodb_server

import asyncmongo
from asyncmongo.gridfs import AsyncGridFSBucket

#: One timed run of a task: upload or download GRIDFS_LARGE once.
Task = Callable[[], Awaitable[None]]


def load_gridfs_large(tgz: Path = TGZ) -> bytes:
    """GRIDFS_LARGE's bytes from the benchmark tarball."""
    with tarfile.open(tgz) as archive:
        member = archive.extractfile("single_and_multi_document/gridfs_large.bin")
        if member is None:
            raise FileNotFoundError(f"gridfs_large.bin is missing from {tgz}")
        return member.read()


@contextmanager
def simulator() -> Iterator[str]:
    """A simulated standalone in a child process (its CPU is not the client's); its URI."""
    process = subprocess.Popen(
        [sys.executable, "-m", "asyncmongo.testing", "standalone"],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert process.stdout is not None
        uri = process.stdout.readline().decode().strip()
        if not uri.startswith("mongodb://"):
            raise RuntimeError(f"the simulator did not start: {uri!r}")
        yield uri
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def jongodb() -> Iterator[str]:
    with jongodb_server() as server:
        yield server.uri


class Driver:
    """One client's two tasks over its own bucket (``upload`` first: ``download`` reads the
    file the last upload wrote)."""

    def __init__(self, name: str, upload: Task, download: Task) -> None:
        self.name = name
        self.upload = upload
        self.download = download


async def async_driver(name: str, bucket: Any, data: bytes) -> Driver:
    """The tasks over an async bucket (asyncmongo's or PyMongo's: the same API), its 1-byte
    file written first."""
    await bucket.upload_from_stream("one byte", b"x")
    last: list[Any] = []

    async def upload() -> None:
        last[:] = [await bucket.upload_from_stream("gridfstest", data)]

    async def download() -> None:
        stream = await bucket.open_download_stream(last[0])
        if len(await stream.read()) != len(data):
            raise AssertionError(f"{name} downloaded another file")

    return Driver(name, upload, download)


async def asyncmongo_driver(uri: str, data: bytes) -> tuple[Driver, Callable[[], Any]]:
    client: asyncmongo.AsyncMongoClient[dict[str, Any]] = asyncmongo.AsyncMongoClient(uri)
    bucket = AsyncGridFSBucket(client.perftest, bucket_name="asyncmongo")
    return await async_driver("asyncmongo", bucket, data), client.close


async def pymongo_async_driver(uri: str, data: bytes) -> tuple[Driver, Callable[[], Any]]:
    import gridfs
    from pymongo import AsyncMongoClient

    client: Any = AsyncMongoClient(uri)
    bucket = gridfs.AsyncGridFSBucket(client.perftest, bucket_name="pymongo_async")
    return await async_driver("PyMongo async", bucket, data), client.close


async def pymongo_sync_driver(uri: str, data: bytes) -> tuple[Driver, Callable[[], Any]]:
    import gridfs
    from pymongo import MongoClient

    client: Any = MongoClient(uri)
    bucket = gridfs.GridFSBucket(client.perftest, bucket_name="pymongo_sync")
    bucket.upload_from_stream("one byte", b"x")
    last: list[Any] = []

    async def upload() -> None:  # blocks the loop, as sync code in an async app would
        last[:] = [bucket.upload_from_stream("gridfstest", data)]

    async def download() -> None:
        if len(bucket.open_download_stream(last[0]).read()) != len(data):
            raise AssertionError("PyMongo sync downloaded another file")

    async def close() -> None:
        client.close()

    return Driver("PyMongo sync", upload, download), close


async def timed(task: Task) -> tuple[float, float]:
    """(client CPU seconds, wall seconds) of one run."""
    cpu, wall = time.process_time(), time.perf_counter()
    await task()
    return time.process_time() - cpu, time.perf_counter() - wall


async def measure(uri: str, repeats: int, label: str, tasks: tuple[str, ...]) -> None:
    data = load_gridfs_large()
    makers = [asyncmongo_driver, pymongo_async_driver, pymongo_sync_driver]
    drivers: list[Driver] = []
    closers: list[Callable[[], Any]] = []
    for make in makers:
        driver, close = await make(uri, data)
        drivers.append(driver)
        closers.append(close)
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    try:
        for driver in drivers:  # warm: connected, indexes made, one file each
            for task_name in tasks:
                await getattr(driver, task_name)()
        for turn in range(repeats):
            order = drivers if turn % 2 == 0 else list(reversed(drivers))
            for driver in order:
                for task_name in tasks:
                    spent, took = await timed(getattr(driver, task_name))
                    cpu.setdefault((task_name, driver.name), []).append(spent)
                    wall.setdefault((task_name, driver.name), []).append(took)
    finally:
        for close in closers:
            await close()
    megabytes = len(data) / 1e6
    print(f"GridFS, {label}, {repeats} repeats of a {megabytes:.1f} MB file\n")
    print("| task | driver | client CPU s/file | MB/s | asyncmongo CPU / this driver's |")
    print("|---|---|---:|---:|---:|")
    for task_name in tasks:
        mine = cpu[(task_name, "asyncmongo")]
        for driver in drivers:
            theirs = cpu[(task_name, driver.name)]
            paired = statistics.median(a / b for a, b in zip(mine, theirs, strict=True))
            rate = megabytes / statistics.median(wall[(task_name, driver.name)])
            shown = "-" if driver.name == "asyncmongo" else f"{paired:.2f}x"
            print(f"| {task_name} | {driver.name} | {statistics.median(theirs):.3f} "
                  f"| {rate:.1f} | {shown} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument("--server", choices=("simulator", "jongodb"), default="simulator")
    args = parser.parse_args()
    factory = None
    if args.loop == "uvloop":
        import uvloop

        factory = uvloop.new_event_loop
    tasks = ("upload", "download") if args.server == "simulator" else ("upload",)
    server = simulator() if args.server == "simulator" else jongodb()
    with server as uri, asyncio.Runner(loop_factory=factory) as runner:
        runner.run(measure(uri, args.repeats, f"{args.server}, {args.loop} loop", tasks))


if __name__ == "__main__":
    main()
