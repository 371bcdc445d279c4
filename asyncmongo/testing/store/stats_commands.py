"""The ``collStats`` and ``dbStats`` commands, shaped as mongod answers them.

Sizes are estimates (the store keeps Python objects, not BSON pages): a document's size is
its approximate BSON size, each index counts 4096 bytes, storage never less than 4096.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store.coll_stats import storage_stats
from asyncmongo.testing.store.compare import integral
from asyncmongo.testing.store.context import CommandContext, collection_name
from asyncmongo.testing.store.errors import StoreError
from asyncmongo.testing.store.values import approximate_size

Reply = dict[str, Any]


def coll_stats(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    name = collection_name(command, "collStats", ctx.db_name)
    collection = ctx.namespaces.get(ctx.db_name, name)
    namespace = f"{ctx.db_name}.{name}"
    if collection is None or collection.is_view:
        raise StoreError(26, f"Collection [{namespace}] not found.")
    return {"ns": namespace, **storage_stats(collection, {"scale": command.get("scale", 1)}),
            "ok": 1.0}


def db_stats(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    scale = integral(command.get("scale", 1))
    if scale is None or scale < 1:
        raise StoreError(2, "Scale factor must be greater than zero")
    collections = [c for c in (ctx.namespaces.get(ctx.db_name, n)
                               for n in ctx.namespaces.names(ctx.db_name)) if c is not None]
    stored = [c for c in collections if not c.is_view]
    objects = sum(len(c) for c in stored)
    data = sum(approximate_size(d) for c in stored for d in c)
    storage = sum(max(sum(approximate_size(d) for d in c), 4096) for c in stored)
    indexes = sum(len(c.indexes) for c in stored)
    return {
        "db": ctx.db_name, "collections": len(stored), "views": len(collections) - len(stored),
        "objects": objects, "avgObjSize": data / objects if objects else 0,
        "dataSize": data / scale, "storageSize": storage / scale, "indexes": indexes,
        "indexSize": 4096 * indexes / scale, "totalSize": (storage + 4096 * indexes) / scale,
        "scaleFactor": scale, "fsUsedSize": 0, "fsTotalSize": 0, "ok": 1.0,
    }
