"""Shared pieces of the driver benchmarks: data sets, servers, measurement, the table.

Kept apart from ``driver_bench.py`` (which holds the tasks and the run order) so the task code
reads as the benchmarking spec does: data, a server to talk to, and a timed section whose wall
time and *client process* CPU time are recorded.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import tarfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import bson  # PyMongo's codec: benchmark infrastructure only (the raw-socket rate probe)

ROOT = Path(__file__).resolve().parents[1]
TGZ = Path("/work/shared/benchmark-data/single_and_multi_document.tgz")
REPLAY = Path(__file__).resolve().parent / "replay_server.py"


@dataclass(frozen=True, slots=True)
class DataSets:
    """The spec's documents (parsed from the tarball once) and their source-file sizes."""

    tweet: dict[str, Any]
    small: dict[str, Any]
    large: dict[str, Any]
    tweet_bytes: int
    small_bytes: int
    large_bytes: int


def load_data(tgz: Path = TGZ) -> DataSets:
    """Read TWEET, SMALL_DOC and LARGE_DOC from the benchmark tarball."""
    raw: dict[str, bytes] = {}
    with tarfile.open(tgz) as archive:
        for name in ("tweet", "small_doc", "large_doc"):
            member = archive.extractfile(f"single_and_multi_document/{name}.json")
            if member is None:
                raise FileNotFoundError(f"{name}.json is missing from {tgz}")
            raw[name] = member.read()
    return DataSets(
        tweet=json.loads(raw["tweet"]),
        small=json.loads(raw["small_doc"]),
        large=json.loads(raw["large_doc"]),
        tweet_bytes=len(raw["tweet"]),
        small_bytes=len(raw["small_doc"]),
        large_bytes=len(raw["large_doc"]),
    )


# --- servers ----------------------------------------------------------------------------


class ReplayServer:
    """benchmarks/replay_server.py in its own process (its CPU is not the client's)."""

    def __init__(self, find_many: int) -> None:
        self.find_many = find_many
        self.port = 0
        self._process: subprocess.Popen[str] | None = None

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def __enter__(self) -> ReplayServer:
        self._process = subprocess.Popen(
            [sys.executable, str(REPLAY), "--port", "0", "--find-many", str(self.find_many)],
            stdout=subprocess.PIPE, text=True, cwd=ROOT,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.startswith("port "):
            self.__exit__()
            raise RuntimeError(f"replay server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def __exit__(self, *exc: object) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def process_cpu(pid: int | None) -> float:
    """User + system CPU seconds of another process (from /proc; 0.0 if unknown)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


_HEADER = struct.Struct("<iiii")


def probe_replay_rate(port: int, count: int = 20_000, depth: int = 500) -> float:
    """find-by-_id requests per second the replay server answers to a raw pipelined client.

    Prebuilt OP_MSGs are written ``depth`` at a time and the replies read back, so the client
    costs almost nothing and the rate is the server's ceiling.
    """
    body = bson.encode({"find": "corpus", "filter": {"_id": 1}, "limit": 1,
                        "singleBatch": True, "$db": "perftest"})
    message = _HEADER.pack(16 + 5 + len(body), 1, 0, 2013) + b"\x00\x00\x00\x00\x00" + body
    batch = message * depth
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.perf_counter()
        done = 0
        while done < count:
            sock.sendall(batch)
            replies = 0
            buffer = b""
            while replies < depth:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    raise ConnectionError("the replay server closed the connection")
                buffer += chunk
                while len(buffer) >= 4:
                    length = int.from_bytes(buffer[:4], "little")
                    if len(buffer) < length:
                        break
                    buffer = buffer[length:]
                    replies += 1
            done += depth
        return done / (time.perf_counter() - start)


def jongodb_server() -> Any:
    """A private jongodb (tests/support/jongodb.py installs it from npm on first use)."""
    sys.path.insert(0, str(ROOT))
    from tests.support.jongodb import JongodbServer, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"jongodb unavailable: {reason}")
    return JongodbServer()


# --- measurement ------------------------------------------------------------------------

#: One operation of a paired measurement (``await call()``).
Call = Callable[[], Awaitable[Any]]


async def cpu_per_op(call: Call, ops: int) -> float:
    """Client CPU µs per operation over ``ops`` calls of ``call``."""
    start = time.process_time()
    for _ in range(ops):
        await call()
    return (time.process_time() - start) / ops * 1e6


async def paired_cpu(
    calls: Mapping[str, Call], pairs: int, batch: int, reset: Call | None = None
) -> dict[str, list[float]]:
    """Each call's CPU µs per op, ``pairs`` samples of ``batch`` operations each, the calls
    taking turns (in alternating order, so a drift in load favours none of them).
    ``reset``, if given, runs untimed before every batch (emptying what the batches insert,
    on a server whose insert slows down as a collection grows).

    Sample ``i`` of every call is taken at the same moment, so the ratio of two calls'
    samples ``i`` cancels the machine's load: on a shared machine the median of those
    paired ratios is far steadier than a ratio of two separately timed runs."""
    for call in calls.values():  # connected, pooled and warm before any timing
        if reset is not None:
            await reset()
        await cpu_per_op(call, batch)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for turn in range(pairs):
        names = list(calls) if turn % 2 == 0 else list(reversed(list(calls)))
        for name in names:
            if reset is not None:
                await reset()
            samples[name].append(await cpu_per_op(calls[name], batch))
    return samples


def paired_ratios(mine: list[float], theirs: list[float]) -> list[float]:
    """``mine[i] / theirs[i]`` for samples of ``paired_cpu``."""
    return [a / b for a, b in zip(mine, theirs, strict=True)]


@dataclass(frozen=True, slots=True)
class Sample:
    """One timed section: wall seconds, client CPU seconds, server CPU seconds, operations."""

    wall: float
    cpu: float
    server_cpu: float
    ops: int


@contextmanager
def timed(ops: int, samples: list[Sample], server_pid: int | None) -> Iterator[None]:
    """Time the body: wall clock and this process's CPU (process_time: all its threads)."""
    server_before = process_cpu(server_pid)
    cpu = time.process_time()
    wall = time.perf_counter()
    yield
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    samples.append(Sample(wall, cpu, process_cpu(server_pid) - server_before, ops))


@dataclass(frozen=True, slots=True)
class Result:
    """The median of a cell's samples (the spec scores the median iteration)."""

    ops_per_s: float
    mb_per_s: float
    cpu_us_per_op: float
    server_cpu_us_per_op: float
    #: Client CPU µs per operation of each repeat, in run order (for per-repeat ratios).
    cpu_us_per_repeat: tuple[float, ...] = ()

    @classmethod
    def of(cls, samples: list[Sample], bytes_per_op: int) -> Result:
        rate = median(s.ops / s.wall for s in samples)
        cpus = tuple(s.cpu / s.ops * 1e6 for s in samples)
        return cls(
            ops_per_s=rate,
            mb_per_s=rate * bytes_per_op / 1e6,
            cpu_us_per_op=median(cpus),
            server_cpu_us_per_op=median(s.server_cpu / s.ops for s in samples) * 1e6,
            cpu_us_per_repeat=cpus,
        )


def ratio(mine: float, theirs: float | None) -> str:
    return "-" if not theirs else f"{mine / theirs:.2f}x"
