"""The six BSON micro-benchmarks of specs/benchmarking, side by side with PyMongo.

Flat, deep and full BSON, each encoded and decoded (datasets from
/work/shared/benchmark-data/extended_bson.tgz, read straight from the tarball). Three
implementations run in the same invocation, each in its own fresh subprocess so none warms
or slows another:

- asyncmongo (pure Python, this package),
- PyMongo's bson with its C extension,
- PyMongo's bson in pure-Python mode (``sys.modules["bson._cbson"] = None`` before the
  import; the worker checks ``bson.has_c()`` is False).

A task repeats one operation ``--ops`` times per iteration; the score is the spec's dataset
size (source file size x ops) over the median iteration time, in MB/s (10**6 bytes). The spec
asks for 10,000 ops and up to 100 iterations; defaults here are smaller so the whole run
takes well under two minutes, which is enough for stable ratios:

    python benchmarks/bson_bench.py [--ops N] [--iterations K] [--tgz PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_TGZ = Path("/work/shared/benchmark-data/extended_bson.tgz")
DATASETS = ("flat", "deep", "full")
# specs/benchmarking: "the dataset size for a task is the size of the single-document source
# file times 10,000 operations" (flat 7531 B, deep 2284 B, full 5734 B).
IMPLEMENTATIONS = ("asyncmongo", "pymongo-c", "pymongo-pure")


def read_datasets(tgz: Path) -> dict[str, str]:
    """The Extended JSON text of each dataset, read from the tarball."""
    texts: dict[str, str] = {}
    with tarfile.open(tgz) as archive:
        for name in DATASETS:
            member = archive.extractfile(f"extended_bson/{name}_bson.json")
            if member is None:
                raise SystemExit(f"{tgz} has no extended_bson/{name}_bson.json")
            texts[name] = member.read().decode()
    return texts


def _codec(impl: str) -> tuple[Callable[[str], Any], Callable[[Any], bytes], Callable[..., Any]]:
    """(load Extended JSON, encode, decode) of one implementation."""
    if impl == "asyncmongo":
        from asyncmongo.bson import decode, encode
        from asyncmongo.bson.json_util import CANONICAL_JSON_OPTIONS, loads

        return (lambda text: loads(text, CANONICAL_JSON_OPTIONS)), encode, decode
    if impl == "pymongo-pure":
        sys.modules["bson._cbson"] = None  # type: ignore[assignment]
    import bson
    from bson import json_util

    want_c = impl == "pymongo-c"
    if bson.has_c() != want_c:
        raise SystemExit(f"{impl}: bson.has_c() is {bson.has_c()}, expected {want_c}")
    options = json_util.JSONOptions(json_mode=json_util.JSONMode.CANONICAL)
    return (lambda text: json_util.loads(text, json_options=options)), bson.encode, bson.decode


def _median_seconds(task: Callable[[], None], iterations: int) -> float:
    task()  # warm-up, discarded
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        task()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run_worker(impl: str, tgz: Path, ops: int, iterations: int) -> dict[str, Any]:
    """Time the six tasks for one implementation (called in a subprocess)."""
    load, encode, decode = _codec(impl)
    results: dict[str, Any] = {}
    for name, text in read_datasets(tgz).items():
        document = load(text)
        data = encode(document)
        if decode(data) != document and impl != "asyncmongo":
            raise SystemExit(f"{impl}: {name} does not round trip")
        size = len(text.encode())
        ops_range = range(ops)

        def encode_task(doc: Any = document) -> None:
            for _ in ops_range:
                encode(doc)

        def decode_task(raw: bytes = data) -> None:
            for _ in ops_range:
                decode(raw)

        for kind, task in (("encode", encode_task), ("decode", decode_task)):
            seconds = _median_seconds(task, iterations)
            results[f"{name} {kind}"] = {"mb_per_s": size * ops / seconds / 1e6, "bson": len(data)}
    return results


def run_in_subprocess(impl: str, tgz: Path, ops: int, iterations: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", impl, "--tgz", str(tgz)]
    cmd += ["--ops", str(ops), "--iterations", str(iterations)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def print_table(results: dict[str, dict[str, Any]]) -> None:
    tasks = list(results["asyncmongo"])
    head = f"{'task':<14}{'asyncmongo':>12}{'pymongo C':>12}{'pymongo py':>12}"
    print(head + f"{'vs py':>9}{'vs C':>8}   (MB/s, higher is better)")
    ratios = []
    for task in tasks:
        ours, c_ext, pure = (results[i][task]["mb_per_s"] for i in IMPLEMENTATIONS)
        ratios.append(ours / pure)
        print(
            f"{task:<14}{ours:>12.1f}{c_ext:>12.1f}{pure:>12.1f}"
            f"{ours / pure:>8.2f}x{ours / c_ext:>7.2f}x"
        )
    verdict = "met" if min(ratios) >= 1.5 else "NOT met"
    print(f"target asyncmongo >= 1.5x pymongo pure-Python on every task: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000, help="operations per iteration")
    parser.add_argument("--iterations", type=int, default=7, help="timed iterations per task")
    parser.add_argument("--tgz", type=Path, default=DEFAULT_TGZ)
    parser.add_argument("--worker", choices=IMPLEMENTATIONS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_worker(args.worker, args.tgz, args.ops, args.iterations)))
        return
    print(f"BSON micro-benchmarks: {args.ops} ops x {args.iterations} iterations (median)")
    print(f"python {sys.version.split()[0]}, data {args.tgz}")
    results = {impl: run_in_subprocess(impl, args.tgz, args.ops, args.iterations)
               for impl in IMPLEMENTATIONS}
    print_table(results)


if __name__ == "__main__":
    main()
