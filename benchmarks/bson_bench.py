"""The BSON micro-benchmarks of specs/benchmarking, side by side with PyMongo.

Flat, deep and full BSON, each encoded and decoded (datasets from
/work/shared/benchmark-data/extended_bson.tgz, read straight from the tarball), plus the
single-document data sets the driver benchmarks insert (TWEET, SMALL_DOC, LARGE_DOC from
single_and_multi_document.tgz), for:

- asyncmongo's pure-Python codec (the reference, ``codec.use_implementation("python")``),
- asyncmongo's C accelerators (``use_implementation("c")``, when this install has them:
  ``codec.available_implementations()``),
- PyMongo's bson in pure-Python mode (``sys.modules["bson._cbson"] = None`` before the
  import; the worker checks ``bson.has_c()`` is False),
- PyMongo's bson with its C extension;
- asyncmongo's C accelerators decoding into PyMongo's classes (``pymongo-classes``: the
  options of the PyMongo-compatible client, ``asyncmongo.compat._values``), decode rows
  only; the issue asks them to stay within 10% of asyncmongo's own classes.

Pure asyncmongo and pure PyMongo run in one subprocess with their iterations interleaved, so
both see the same machine load (the machine may be shared); the two C codecs likewise in a
second subprocess. A task repeats one operation ``--ops`` times per iteration (LARGE_DOC:
``--ops // 250``, at least 1); the score is the spec's dataset size (source file size x ops)
over the median iteration time, in MB/s (10**6 bytes); ratios are also given for the best
iteration, which is the least disturbed when other processes share the machine. The spec
asks for 10,000 ops and up to 100 iterations; the defaults here are smaller so the whole run
takes about a minute, which is enough for stable ratios:

    python benchmarks/bson_bench.py [--ops N] [--iterations K] [--tgz PATH] [--single-tgz PATH]
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
SINGLE_TGZ = Path("/work/shared/benchmark-data/single_and_multi_document.tgz")
DATASETS = ("flat", "deep", "full")
# specs/benchmarking: "the dataset size for a task is the size of the single-document source
# file times 10,000 operations" (flat 7531 B, deep 2284 B, full 5734 B).
SINGLE_DATASETS = ("tweet", "small_doc", "large_doc")
LARGE_OPS_DIVISOR = 250  # LARGE_DOC is ~2.5 MB of BSON: fewer ops per iteration
IMPLEMENTATIONS = ("asyncmongo-c", "asyncmongo", "pymongo-c", "pymongo-pure", "pymongo-classes")
# Decoding into PyMongo's classes: at least this fraction of the throughput into asyncmongo's.
PYMONGO_CLASSES_TARGET = 0.9
# Issue #9: asyncmongo C encode time at most this fraction of PyMongo C's.
C_ENCODE_TARGETS = {"large_doc encode": 0.6, "tweet encode": 0.8, "small_doc encode": 0.8}


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


def read_single_datasets(tgz: Path) -> dict[str, str]:
    """The plain JSON text of TWEET, SMALL_DOC and LARGE_DOC, read from the tarball."""
    texts: dict[str, str] = {}
    with tarfile.open(tgz) as archive:
        for name in SINGLE_DATASETS:
            member = archive.extractfile(f"single_and_multi_document/{name}.json")
            if member is None:
                raise SystemExit(f"{tgz} has no single_and_multi_document/{name}.json")
            texts[name] = member.read().decode()
    return texts


def c_available() -> bool:
    """Whether this install has asyncmongo's C accelerators."""
    from asyncmongo.bson import codec

    return "c" in codec.available_implementations()


def pymongo_classes_available() -> bool:
    """Whether PyMongo is installed (for decoding into its classes)."""
    try:
        import bson  # noqa: F401
    except ImportError:
        return False
    return True


_Codec = tuple[Callable[[str], Any], Callable[[Any], bytes], Callable[..., Any]]


def _codec(impl: str) -> _Codec:
    """(load Extended JSON, encode, decode) of one implementation."""
    if impl in ("asyncmongo", "asyncmongo-c", "pymongo-classes"):
        from asyncmongo.bson import codec, decode, encode
        from asyncmongo.bson.json_util import CANONICAL_JSON_OPTIONS, loads

        # The pure asyncmongo codec never shares a worker with the C ones, so the
        # process-wide switch is safe.
        codec.use_implementation("python" if impl == "asyncmongo" else "c")
        if impl == "pymongo-classes":
            from asyncmongo.compat._values import pymongo_codec_options

            pm_options = pymongo_codec_options()

            def decode_pymongo(data: bytes) -> Any:
                return decode(data, pm_options)

            return (lambda text: loads(text, CANONICAL_JSON_OPTIONS)), encode, decode_pymongo
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


def _time_tasks(tasks: list[Callable[[], None]], iterations: int) -> list[list[float]]:
    """Iteration times of each task, their iterations interleaved (after a discarded warm-up)."""
    for task in tasks:
        task()
    times: list[list[float]] = [[] for _ in tasks]
    for _ in range(iterations):
        for task, samples in zip(tasks, times, strict=True):
            start = time.perf_counter()
            task()
            samples.append(time.perf_counter() - start)
    return times


def _add_tasks(
    tasks: dict[str, tuple[Callable[[], None], int]],
    impl: str,
    name: str,
    document: Any,
    codec: _Codec,
    ops: int,
) -> None:
    """The encode and decode tasks of one document (with their op counts)."""
    _, encode, decode = codec
    data = encode(document)
    # PyMongo's classes do not compare equal to asyncmongo's: compare their bytes.
    decoded = decode(data)
    if (encode(decoded) != data) if impl == "pymongo-classes" else (decoded != document):
        raise SystemExit(f"{impl}: {name} does not round trip")
    ops_range = range(ops)

    def encode_task() -> None:
        for _ in ops_range:
            encode(document)

    def decode_task() -> None:
        for _ in ops_range:
            decode(data)

    tasks[f"{name} encode"] = (encode_task, ops)
    tasks[f"{name} decode"] = (decode_task, ops)


def _tasks(
    impl: str, texts: dict[str, str], singles: dict[str, str], ops: int
) -> dict[str, tuple[Callable[[], None], int]]:
    """The tasks of one implementation, ready to run, with their op counts."""
    codec = _codec(impl)
    tasks: dict[str, tuple[Callable[[], None], int]] = {}
    for name, text in texts.items():
        _add_tasks(tasks, impl, name, codec[0](text), codec, ops)
    for name, text in singles.items():
        count = max(1, ops // LARGE_OPS_DIVISOR) if name == "large_doc" else ops
        _add_tasks(tasks, impl, name, json.loads(text), codec, count)
    return tasks


def run_worker(
    impls: list[str], tgz: Path, single_tgz: Path, ops: int, iterations: int
) -> dict[str, Any]:
    """Time every task for the given implementations, interleaved (in a subprocess).

    Returns, per implementation and task, MB/s of the median iteration (the spec's score)
    and of the best one (the least disturbed by other processes on a shared machine).
    """
    texts = read_datasets(tgz)
    singles = read_single_datasets(single_tgz)
    sizes = {name: len(text.encode()) for name, text in {**texts, **singles}.items()}
    all_tasks = {impl: _tasks(impl, texts, singles, ops) for impl in impls}
    results: dict[str, Any] = {impl: {} for impl in impls}
    for task_name, (_, count) in all_tasks[impls[0]].items():
        size = sizes[task_name.split()[0]] * count
        times = _time_tasks([all_tasks[i][task_name][0] for i in impls], iterations)
        for impl, samples in zip(impls, times, strict=True):
            results[impl][task_name] = {
                "median": size / statistics.median(samples) / 1e6,
                "best": size / min(samples) / 1e6,
            }
    return results


def run_in_subprocess(
    impls: list[str], tgz: Path, single_tgz: Path, ops: int, iterations: int
) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", ",".join(impls), "--tgz", str(tgz)]
    cmd += ["--single-tgz", str(single_tgz), "--ops", str(ops), "--iterations", str(iterations)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def print_table(results: dict[str, dict[str, Any]]) -> None:
    """The pure-Python comparison (issue #7's target), then the C one (issue #9's)."""
    has_c = "asyncmongo-c" in results
    tasks = list(results["asyncmongo"])
    print("MB/s of the median iteration (higher is better); ratios for median and best iteration")
    head = f"{'task':<18}{'am C':>9}{'am py':>9}{'pymongo C':>11}{'pymongo py':>11}"
    print(head + f"{'py vs py med':>13}{'best':>7}{'C vs C med':>12}{'best':>7}")
    worst = {"median": float("inf"), "best": float("inf")}
    for task in tasks:
        ours, c_ext, pure = (results[i][task] for i in ("asyncmongo", "pymongo-c", "pymongo-pure"))
        ours_c = results["asyncmongo-c"][task] if has_c else None
        ratio = {k: ours[k] / pure[k] for k in worst}
        if task.split()[0] in DATASETS:  # issue #7's target covers the spec's six tasks
            worst = {k: min(worst[k], ratio[k]) for k in worst}
        c_col = f"{ours_c['median']:>9.1f}" if ours_c else f"{'n/a':>9}"
        c_ratio = (
            f"{ours_c['median'] / c_ext['median']:>11.2f}x{ours_c['best'] / c_ext['best']:>6.2f}x"
            if ours_c
            else f"{'n/a':>12}{'':>7}"
        )
        print(
            f"{task:<18}{c_col}{ours['median']:>9.1f}{c_ext['median']:>11.1f}"
            f"{pure['median']:>11.1f}{ratio['median']:>12.2f}x{ratio['best']:>6.2f}x{c_ratio}"
        )
    for kind, value in worst.items():
        verdict = "met" if value >= 1.5 else "NOT met"
        print(
            f"target >= 1.5x pymongo pure-Python on flat/deep/full ({kind}): {verdict}, "
            f"worst {value:.2f}x"
        )
    if not has_c:
        print("asyncmongo C accelerators not built: no C comparison")
        return
    if "pymongo-classes" in results:
        print_pymongo_classes(results)
    for task, limit in C_ENCODE_TARGETS.items():
        ours_c, c_ext = results["asyncmongo-c"][task], results["pymongo-c"][task]
        # time ratio = inverse of the throughput ratio
        med, best = c_ext["median"] / ours_c["median"], c_ext["best"] / ours_c["best"]
        verdict = "met" if med <= limit else "NOT met"
        print(
            f"target {task} time <= {limit}x pymongo C: {verdict}, "
            f"{med:.2f}x median, {best:.2f}x best"
        )


def print_pymongo_classes(results: dict[str, dict[str, Any]]) -> None:
    """C decoding into PyMongo's classes against asyncmongo's own, and PyMongo's decode."""
    print("C decode MB/s (median): asyncmongo classes, PyMongo classes, PyMongo's bson.decode")
    print(f"{'task':<18}{'am C':>9}{'pm classes':>12}{'pymongo C':>11}{'ratio med':>11}{'best':>7}")
    worst = float("inf")
    for task in (t for t in results["asyncmongo-c"] if t.endswith("decode")):
        ours, pm, ext = (results[i][task] for i in ("asyncmongo-c", "pymongo-classes", "pymongo-c"))
        ratio, best = pm["median"] / ours["median"], pm["best"] / ours["best"]
        worst = min(worst, ratio)
        print(
            f"{task:<18}{ours['median']:>9.1f}{pm['median']:>12.1f}{ext['median']:>11.1f}"
            f"{ratio:>10.2f}x{best:>6.2f}x"
        )
    verdict = "met" if worst >= PYMONGO_CLASSES_TARGET else "NOT met"
    print(
        f"target PyMongo classes >= {PYMONGO_CLASSES_TARGET}x asyncmongo classes (C decode, "
        f"median): {verdict}, worst {worst:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ops", type=int, default=500, help="operations per iteration")
    parser.add_argument("--iterations", type=int, default=25, help="timed iterations per task")
    parser.add_argument("--tgz", type=Path, default=DEFAULT_TGZ)
    parser.add_argument("--single-tgz", type=Path, default=SINGLE_TGZ)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        impls = args.worker.split(",")
        result = run_worker(impls, args.tgz, args.single_tgz, args.ops, args.iterations)
        print(json.dumps(result))
        return
    print(f"BSON micro-benchmarks: {args.ops} ops x {args.iterations} iterations (median)")
    print(f"python {sys.version.split()[0]}, data {args.tgz}, {args.single_tgz}")
    run = (args.tgz, args.single_tgz, args.ops, args.iterations)
    results = run_in_subprocess(["asyncmongo", "pymongo-pure"], *run)
    c_impls = ["asyncmongo-c", "pymongo-c"] if c_available() else ["pymongo-c"]
    if c_available() and pymongo_classes_available():
        c_impls.append("pymongo-classes")
    results.update(run_in_subprocess(c_impls, *run))
    print_table(results)


if __name__ == "__main__":
    main()
