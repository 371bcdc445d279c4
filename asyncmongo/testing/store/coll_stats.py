"""The ``$collStats`` aggregation stage: one document of a collection's statistics.

mongod answers ``{ns, host, localTime}`` plus a section per requested option:
``storageStats`` (sizes, ``count``, ``capped`` and for a capped collection ``max`` and
``maxSize``, the index count and sizes, scaled by ``scale``), ``count``, ``latencyStats`` and
``queryExecStats``. The store has no storage engine, so sizes are its BSON size estimates and
the latency/scan counters are zero; it does not know the host it is served on (no ``host``).
The stage must come first; a missing collection is 26 NamespaceNotFound for
``storageStats``/``count``, as on mongod.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.types import Int64
from asyncmongo.testing.store.collection import Collection, Document
from asyncmongo.testing.store.compare import integral
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.values import approximate_size

STAGE = "$collStats"
_OPTIONS = frozenset({"storageStats", "count", "latencyStats", "queryExecStats"})


def is_coll_stats(pipeline: Any) -> bool:
    """True if the pipeline starts with ``$collStats``."""
    return (isinstance(pipeline, list) and bool(pipeline) and isinstance(pipeline[0], Mapping)
            and STAGE in pipeline[0])


def check_position(pipeline: Any) -> None:
    """``$collStats`` anywhere but first fails as on mongod (40602)."""
    if isinstance(pipeline, list) and any(
            isinstance(stage, Mapping) and STAGE in stage for stage in pipeline[1:]):
        raise StoreError(40602, "$collStats is only valid as the first stage in a pipeline")


def coll_stats(collection: Collection | None, namespace: str, spec: Any,
               now: datetime.datetime) -> list[Document]:
    """The stage's single output document."""
    if not isinstance(spec, Mapping):
        raise StoreError(5447000, "$collStats must take a nested object but found: "
                                  f"{spec!r}")
    for option in spec:
        if option not in _OPTIONS:
            raise StoreError(40415, f"BSON field '$collStats.{option}' is an unknown field.")
    document: Document = {"ns": namespace, "localTime": now}
    if "latencyStats" in spec:
        zero = {"latency": Int64(0), "ops": Int64(0)}
        document["latencyStats"] = {"reads": dict(zero), "writes": dict(zero),
                                    "commands": dict(zero), "transactions": dict(zero)}
    if ("storageStats" in spec or "count" in spec) and (
            collection is None or collection.is_view):
        what = "storageStats" if "storageStats" in spec else "count"
        raise StoreError(26, f"Unable to retrieve {what} in $collStats stage :: caused by :: "
                             f"Collection [{namespace}] not found.")
    if "storageStats" in spec and collection is not None:
        document["storageStats"] = storage_stats(collection, spec["storageStats"])
    if "count" in spec and collection is not None:
        document["count"] = len(collection)
    if "queryExecStats" in spec:
        document["queryExecStats"] = {"collectionScans": {"total": Int64(0),
                                                          "nonTailable": Int64(0)}}
    return [document]


def storage_stats(collection: Collection, options: Any) -> Document:
    scale = integral(options.get("scale", 1)) if isinstance(options, Mapping) else 1
    if scale is None or scale < 1:
        raise StoreError(51024, "BSON field 'scale' value must be >= 1, actual value "
                                f"'{options.get('scale') if isinstance(options, Mapping) else 0}'")
    size = sum(approximate_size(d) for d in collection)
    index_sizes = {name: 4096 // scale for name in collection.indexes}
    stats: Document = {
        "size": size // scale,
        "count": len(collection),
        "avgObjSize": size // len(collection) if len(collection) else 0,
        "numOrphanDocs": 0,
        "storageSize": max(size, 4096) // scale,
        "freeStorageSize": 0,
        "capped": collection.capped,
    }
    if collection.capped:
        limit = collection.options.get("max")
        if limit is not None:
            stats["max"] = limit
        stats["maxSize"] = integral(collection.options.get("size")) or 0
    stats.update({
        "nindexes": len(collection.indexes),
        "indexBuilds": [],
        "totalIndexSize": sum(index_sizes.values()),
        "totalSize": (max(size, 4096) + 4096 * len(collection.indexes)) // scale,
        "indexSizes": index_sizes,
        "scaleFactor": scale,
    })
    return stats
