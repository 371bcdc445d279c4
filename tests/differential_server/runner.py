"""Runs one generated case against a server through asyncmongo's client and reduces the
answer to a comparable form; decides whether two servers agree.

Every case inserts its documents into a collection of its own (jongodb has no ``drop``).
jongodb's answer passes through ``deviations.for_jongodb`` first: where jongodb is known to
differ from mongod's documented behaviour, the case records mongod's answer instead.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from asyncmongo.bson import ObjectId
from asyncmongo.errors import OperationFailure
from tests.differential_server.canonical import canonical, multiset
from tests.differential_server.grammar import Case

__all__ = ["Answer", "answer", "ordered", "show"]


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """A server's reply reduced for comparison: ``value`` is canonical; ``error`` is the
    code of a refused case (then ``value`` is None) and ``message`` its text."""

    value: Any = None
    error: int | None = None
    message: str = ""


def ordered(case: Case) -> bool:
    """Whether the answer's order is defined: a find with a sort, or a pipeline whose last
    reordering stage is a ``$sort``."""
    if case.kind == "find":
        return bool(case.spec.get("sort"))
    if case.kind != "aggregate":
        return False
    order = False
    for stage in case.spec["pipeline"]:
        if "$sort" in stage:
            order = True
        elif "$group" in stage:
            order = False
    return order


def _generated_ids(document: dict[str, Any]) -> dict[str, Any]:
    """An upsert without an ``_id`` in its filter gets a fresh ObjectId on each server."""
    identifier = document.get("_id")
    if isinstance(identifier, ObjectId) and not str(identifier).startswith("65a0"):
        return {**document, "_id": "<generated>"}
    return document


async def _run(case: Case, collection: Any) -> Any:
    spec = case.spec
    if case.kind == "find":
        return await collection.find(
            spec["filter"], spec.get("projection"), sort=list(spec.get("sort", {}).items()) or None,
            skip=spec.get("skip", 0), limit=spec.get("limit", 0)).to_list()
    if case.kind == "count":
        return await collection.count_documents(spec["filter"])
    if case.kind == "distinct":
        return await collection.distinct(spec["key"], spec["filter"])
    if case.kind == "update":
        method = collection.update_many if spec["multi"] else collection.update_one
        result = await method(spec["filter"], spec["update"], upsert=spec["upsert"])
        documents = await collection.find({}, sort=[("_id", 1)]).to_list()
        reply = {key: result.raw_result.get(key) for key in ("n", "nModified")}
        reply["upserted"] = "upserted" in result.raw_result
        return [reply, *map(_generated_ids, documents)]
    pipeline = json.loads(json.dumps(spec["pipeline"], default=str).replace(
        '"{self}"', json.dumps(collection.name))) if _has_lookup(spec["pipeline"]) else \
        spec["pipeline"]
    return await (await collection.aggregate(pipeline)).to_list()


def _has_lookup(pipeline: list[dict[str, Any]]) -> bool:
    return any("$lookup" in stage for stage in pipeline)


async def answer(case: Case, collection: Any) -> Answer:
    """Insert the case's documents into ``collection`` and run its operation there."""
    if case.documents:
        await collection.insert_many([dict(document) for document in case.documents])
    try:
        raw = await _run(case, collection)
    except OperationFailure as exc:
        return Answer(error=exc.code, message=str(exc)[:300])
    return Answer(value=raw)


def reduce(case: Case, raw: Any) -> Any:
    """The canonical form of a raw answer: ordered where the case defines an order."""
    if case.kind == "distinct":
        return multiset(raw, typed=False)
    if (isinstance(raw, list) and case.kind != "update"
                                   and not ordered(case)):
        return multiset(raw)
    return canonical(raw)


def show(case: Case, simulator: Answer, jongodb: Answer) -> str:
    """A disagreement, printable: the case and both answers."""
    return (f"seed {case.seed} {case.kind} {case.spec!r}\n  documents {case.documents!r}\n"
            f"  simulator: {simulator.value if simulator.error is None else simulator.message}\n"
            f"  jongodb:   {jongodb.value if jongodb.error is None else jongodb.message}")
