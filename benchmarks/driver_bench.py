"""Driver benchmarks (issue #9): asyncmongo side by side with PyMongo (work in progress).

The MongoDB benchmarking spec's single- and multi-document tasks, run against jongodb and a
replay server, reporting rate and the client's own CPU time per operation.
"""

from __future__ import annotations

import sys
import time

from pymongo import MongoClient

sys.path.insert(0, ".")
from tests.support.jongodb import JongodbServer  # noqa: E402


def main() -> None:
    with JongodbServer() as server:
        client: MongoClient[dict[str, object]] = MongoClient(server.uri)
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(200):
            client.admin.command("hello")
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"pymongo sync hello: {200 / wall:.0f} ops/s, {cpu / 200 * 1e6:.1f} us CPU/op")
        client.close()


if __name__ == "__main__":
    main()
