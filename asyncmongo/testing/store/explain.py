"""``explain`` of a ``find``, as mongod (4.4+) answers it.

The reply has mongod's layout: ``queryPlanner`` (the namespace, the parsed filter and the
winning plan: an index scan of the index the store's planner picks, or a collection scan),
``command`` (the explained command with its ``$db``) and, for the ``executionStats`` and
``allPlansExecution`` verbosities (mongod's default is ``allPlansExecution``),
``executionStats`` with what running the query returned. The query runs as a single batch, so
no cursor is left open. ``maxTimeMS`` of the explain command itself is the server's to enforce
(fail point blocks, see testing/server/faults.py), as for any command.

Only ``find`` is explained (the driver's ``cursor.explain()``); explaining another command is
answered with CommandNotSupported (115) instead of a made-up plan.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from asyncmongo.testing.store import crud, plan
from asyncmongo.testing.store.context import CommandContext, collection_name, optional_document
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.known_fields import check_fields

__all__ = ["VERBOSITIES", "explain"]

Reply = dict[str, Any]

VERBOSITIES = ("queryPlanner", "executionStats", "allPlansExecution")
#: mongod's explain.idl.
_FIELDS = frozenset({"explain", "verbosity"})


def explain(ctx: CommandContext, command: Mapping[str, Any]) -> Reply:
    check_fields(command, _FIELDS)
    inner = command.get("explain")
    if not isinstance(inner, Mapping) or not inner:
        raise bad_value("explain command requires a nested object")
    verbosity = command.get("verbosity", "allPlansExecution")
    if verbosity not in VERBOSITIES:
        raise bad_value("verbosity string must be one of "
                        "{'queryPlanner', 'executionStats', 'allPlansExecution'}")
    name = next(iter(inner))
    if name != "find":
        raise StoreError(115, f"the simulated server explains find only, not {name!r}")
    coll = collection_name(inner, "find", ctx.db_name)
    query = optional_document(inner, "filter") or {}
    collection = ctx.namespaces.get(ctx.db_name, coll)
    index = plan.plan_index(collection, query, optional_document(inner, "sort"),
                            inner.get("hint"))
    winning = _stage(index, query)
    reply: Reply = {
        "explainVersion": "1",
        "queryPlanner": {
            "namespace": f"{ctx.db_name}.{coll}",
            "indexFilterSet": False,
            "parsedQuery": dict(query),
            "winningPlan": winning,
            "rejectedPlans": [],
        },
        "command": {**inner, "$db": ctx.db_name},
    }
    if verbosity != "queryPlanner":
        reply["executionStats"] = _execution_stats(ctx, inner, winning)
    reply["ok"] = 1.0
    return reply


def _stage(index: Any, query: Mapping[str, Any]) -> dict[str, Any]:
    if index is None:
        return {"stage": "COLLSCAN", "filter": dict(query), "direction": "forward"}
    return {"stage": "FETCH", "inputStage": {
        "stage": "IXSCAN", "keyPattern": dict(index.key), "indexName": index.name,
        "direction": "forward"}}


def _execution_stats(ctx: CommandContext, inner: Mapping[str, Any],
                     winning: dict[str, Any]) -> dict[str, Any]:
    started = time.monotonic()
    run = {k: v for k, v in inner.items() if k != "batchSize"}
    run["singleBatch"] = True
    found = crud.find(ctx, run)["cursor"]["firstBatch"]
    return {
        "executionSuccess": True,
        "nReturned": len(found),
        "executionTimeMillis": int((time.monotonic() - started) * 1000),
        "executionStages": {**winning, "nReturned": len(found)},
    }
