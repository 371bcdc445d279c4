"""Aggregation pipelines over in-memory documents.

Stages: $match $project $addFields/$set $unset $sort $skip $limit $group (accumulators $sum
$avg $min $max $first $last $push $addToSet $count) $count $unwind (preserveNullAndEmptyArrays,
includeArrayIndex) $sortByCount $replaceRoot/$replaceWith $facet $lookup (localField/
foreignField, and/or a pipeline with ``let``; ``from`` may be a view) $unionWith $graphLookup
(``joins.py``) $documents and the writing stages $out and $merge (basic).
An unknown stage fails with 40324 as on the server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from asyncmongo.bson.types import Int64
from asyncmongo.testing.store import (
    expressions,
    joins,
    metadata,
    search_indexes,
    text_search,
    unsupported,
)
from asyncmongo.testing.store.collection import Collection, Index, id_key
from asyncmongo.testing.store.compare import hash_key, integral
from asyncmongo.testing.store.database import Namespaces
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.matcher import compile_filter
from asyncmongo.testing.store.paths import MISSING, get_path, split_path
from asyncmongo.testing.store.projection import compile_projection
from asyncmongo.testing.store.render import render
from asyncmongo.testing.store.sorting import sort_documents
from asyncmongo.testing.store.values import copy_document, deep_copy

Document = dict[str, Any]
Stage = Callable[[list[Document]], list[Document]]

MAX_VIEW_DEPTH = 20
UPDATE_STAGES = frozenset({"$addFields", "$set", "$project", "$unset", "$replaceRoot",
                           "$replaceWith"})


@dataclass(frozen=True, slots=True)
class PipelineContext:
    """Where a pipeline runs: its database (for $lookup/$out/$merge) and the catalog;
    ``collection`` names the collection an aggregate command reads (whose text index a first
    ``$match`` with ``$text`` searches), None for sub-pipelines and views."""

    db_name: str
    namespaces: Namespaces | None = None
    variables: Mapping[str, Any] | None = None
    collection: str | None = None


def run_pipeline(documents: list[Document], pipeline: Any, context: PipelineContext,
                 *, allowed: frozenset[str] | None = None) -> list[Document]:
    """The output of ``pipeline`` for ``documents`` (the input list is not changed)."""
    stages = compile_pipeline(pipeline, context, allowed=allowed)
    result = documents
    for stage in stages:
        result = stage(result)
    return result


def check_update_pipeline(pipeline: Any) -> None:
    """mongod parses a pipeline-style update before it looks for documents: an unknown stage
    (40324) or one not allowed in an update (72) fails the command even when nothing
    matches."""
    if not isinstance(pipeline, list):
        raise StoreError(14, "'pipeline' option must be specified as an array")
    for spec in pipeline:
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise StoreError(40323, "A pipeline stage specification object must contain "
                                    "exactly one field.")
        name = next(iter(spec))
        if name not in _STAGES:
            raise StoreError(40324, f"Unrecognized pipeline stage name: '{name}'")
        if name not in UPDATE_STAGES:
            raise StoreError(72, f"{name} is not allowed to be used within an update")


def compile_pipeline(pipeline: Any, context: PipelineContext,
                     *, allowed: frozenset[str] | None = None) -> list[Stage]:
    if not isinstance(pipeline, list):
        raise StoreError(14, "'pipeline' option must be specified as an array")
    stages = []
    for position, spec in enumerate(pipeline):
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise StoreError(40323, "A pipeline stage specification object must contain "
                                    "exactly one field.")
        name, argument = next(iter(spec.items()))
        if allowed is not None and name not in allowed:
            raise StoreError(72, f"{name} is not allowed to be used within an update")
        if name in ("$out", "$merge") and position != len(pipeline) - 1:
            raise StoreError(40601, f"{name} can only be the final stage in the pipeline")
        builder = _STAGES.get(name)
        if builder is None and name in unsupported.STAGES:
            raise unsupported.stage(name)
        if builder is None:
            raise StoreError(40324, f"Unrecognized pipeline stage name: '{name}'")
        if name == "$match" and isinstance(argument, Mapping) and text_search.text_argument(
                argument) is not None:
            stages.append(_text_match(argument, context, position))
            continue
        stages.append(builder(argument, context))
    return stages


def _text_match(argument: Mapping[str, Any], context: PipelineContext, position: int) -> Stage:
    """A first ``$match`` with ``$text``: the matching documents, carrying their scores."""
    if position != 0 or context.collection is None or context.namespaces is None:
        raise StoreError(17313, "$match with $text is only allowed as the first pipeline stage")
    collection = context.namespaces.get(context.db_name, context.collection)
    predicate, search = text_search.compile_text_filter(collection, argument, context.variables)
    assert search is not None
    return lambda docs: text_search.with_scores([d for d in docs if predicate(d)], search)


def _match(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping):
        raise StoreError(15959, "the match filter must be an expression in an object")
    predicate = compile_filter(argument, context.variables)
    return lambda docs: [d for d in docs if predicate(d)]


def _project(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping):
        raise StoreError(15969, "$project specification must be an object")
    projector = compile_projection(argument, aggregate=True, variables=context.variables)
    return lambda docs: [metadata.keep_score(d, projector(d)) for d in docs]


def _add_fields(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping):
        raise StoreError(40272, "$addFields specification stage must be an object")
    fields = _flatten_fields(argument)

    def run(docs: list[Document]) -> list[Document]:
        output = []
        for doc in docs:
            new = deep_copy(doc)
            for path, expression in fields:
                _set_path(new, split_path(path),
                          expressions.evaluate(expression, doc, context.variables))
            output.append(new)
        return output

    return run


def _flatten_fields(spec: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    fields: list[tuple[str, Any]] = []
    for key, value in spec.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and not next(iter(value)).startswith("$"):
            fields.extend(_flatten_fields(value, path + "."))
        else:
            fields.append((path, expressions.parse(value)))
    return fields


def _set_path(document: Document, parts: list[str], value: Any) -> None:
    target: Any = document
    for key in parts[:-1]:
        child = target.get(key)
        if not isinstance(child, dict):
            child = {}
            target[key] = child
        target = child
    if value is MISSING:
        target.pop(parts[-1], None)
    else:
        target[parts[-1]] = value


def _unset(argument: Any, context: PipelineContext) -> Stage:
    paths = [argument] if isinstance(argument, str) else argument
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise StoreError(31002, "$unset specification must be a string or an array containing "
                                "only string values")
    return _project({p: 0 for p in paths}, context)


def _sort(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping) or not argument:
        raise StoreError(15976, "$sort stage must have at least one sort key")
    sort_documents([], argument)
    return lambda docs: sort_documents(docs, argument)


def _non_negative(name: str, argument: Any, code: int, positive: bool) -> int:
    value = integral(argument)
    if value is None:
        raise StoreError(code, f"invalid argument to {name} stage: Cannot represent as a 64-bit "
                               "integer")
    if value < 0 or (positive and value == 0):
        raise StoreError(code, f"invalid argument to {name} stage: Expected a "
                               f"{'positive' if positive else 'non-negative'} number in: "
                               f"{name}: {value}")
    return value


def _skip(argument: Any, context: PipelineContext) -> Stage:
    count = _non_negative("$skip", argument, 15956, False)
    return lambda docs: docs[count:]


def _limit(argument: Any, context: PipelineContext) -> Stage:
    count = _non_negative("$limit", argument, 15958, True)
    return lambda docs: docs[:count]


_ACCUMULATORS = frozenset({"$sum", "$avg", "$min", "$max", "$first", "$last", "$push",
                           "$addToSet", "$count"})


def _group(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping) or "_id" not in argument:
        raise StoreError(15955, "a group specification must include an _id")
    key_expression = expressions.parse(argument["_id"])
    accumulators: list[tuple[str, str, Any]] = []
    for field, spec in argument.items():
        if field == "_id":
            continue
        if not isinstance(spec, Mapping) or len(spec) != 1:
            raise StoreError(40234, f"The field '{field}' must be an accumulator object")
        name, expression = next(iter(spec.items()))
        if name not in _ACCUMULATORS and name in unsupported.ACCUMULATORS:
            raise StoreError(15952, f"unknown group operator '{name}' (a MongoDB accumulator "
                                    f"that {unsupported.STORE} does not implement)")
        if name not in _ACCUMULATORS:
            raise StoreError(15952, f"unknown group operator '{name}'")
        accumulators.append((field, name, expressions.parse(expression)))

    def run(docs: list[Document]) -> list[Document]:
        groups: dict[Any, tuple[Any, list[Document]]] = {}
        for doc in docs:
            key = expressions.evaluate(key_expression, doc, context.variables)
            key = None if key is MISSING else key
            groups.setdefault(hash_key(key), (key, []))[1].append(doc)
        return [_group_output(key, members, accumulators, context.variables)
                for key, members in groups.values()]

    return run


def _group_output(key: Any, members: list[Document], accumulators: list[tuple[str, str, Any]],
                  variables: Mapping[str, Any] | None) -> Document:
    output: Document = {"_id": key}
    for field, name, expression in accumulators:
        if name == "$count":
            output[field] = len(members)
            continue
        values = [expressions.evaluate(expression, d, variables) for d in members]
        if name == "$push":
            output[field] = [v for v in values if v is not MISSING]
        elif name == "$addToSet":
            unique: dict[Any, Any] = {}
            for v in values:
                if v is not MISSING:
                    unique.setdefault(hash_key(v), v)
            output[field] = list(unique.values())
        elif name in ("$first", "$last"):
            chosen = values[0] if name == "$first" else values[-1]
            output[field] = None if chosen is MISSING else chosen
        else:
            output[field] = expressions.accumulate(name, [v for v in values if v is not MISSING])
    return output


def _count(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, str) or not argument or argument.startswith("$") or (
            "." in argument):
        raise StoreError(40156, "the count field must be a non-empty string without '$' or '.'")
    return lambda docs: [{argument: len(docs)}] if docs else []


def _unwind(argument: Any, context: PipelineContext) -> Stage:
    spec = {"path": argument} if isinstance(argument, str) else argument
    if not isinstance(spec, Mapping):
        raise StoreError(15981, "expected either a string or an object as specification for "
                                "$unwind stage")
    path = spec.get("path")
    if not isinstance(path, str) or not path.startswith("$"):
        raise StoreError(28818, "path option to $unwind stage should be prefixed with a '$'")
    parts = split_path(path[1:])
    preserve = bool(spec.get("preserveNullAndEmptyArrays", False))
    index_field = spec.get("includeArrayIndex")

    def run(docs: list[Document]) -> list[Document]:
        output: list[Document] = []
        for doc in docs:
            output.extend(_unwind_one(doc, parts, preserve, index_field))
        return output

    return run


def _unwind_one(doc: Document, parts: list[str], preserve: bool,
                index_field: str | None) -> list[Document]:
    value = _get_no_index(doc, parts)
    if isinstance(value, list) and value:
        output = []
        for index, element in enumerate(value):
            new = deep_copy(doc)
            _set_path(new, parts, element)
            if index_field:
                new[index_field] = Int64(index)
            output.append(new)
        return output
    if value is None or value is MISSING or isinstance(value, list):
        if not preserve:
            return []
        new = deep_copy(doc)
        if isinstance(value, list):
            _set_path(new, parts, MISSING)
        if index_field:
            new[index_field] = None
        return [new]
    new = deep_copy(doc)
    if index_field:
        new[index_field] = None
    return [new]


def _get_no_index(doc: Document, parts: list[str]) -> Any:
    value: Any = doc
    for key in parts:
        if not isinstance(value, Mapping) or key not in value:
            return MISSING
        value = value[key]
    return value


def _sort_by_count(argument: Any, context: PipelineContext) -> Stage:
    group = _group({"_id": argument, "count": {"$sum": 1}}, context)
    return lambda docs: sort_documents(group(docs), {"count": -1})


def _replace_root(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping) or "newRoot" not in argument:
        raise StoreError(40231, "no newRoot specified for the $replaceRoot stage")
    return _replace_with(argument["newRoot"], context)


def _replace_with(argument: Any, context: PipelineContext) -> Stage:
    expression = expressions.parse(argument)

    def run(docs: list[Document]) -> list[Document]:
        output = []
        for doc in docs:
            root = expressions.evaluate(expression, doc, context.variables)
            if not isinstance(root, Mapping):
                raise StoreError(40228, "'replacement document' must evaluate to an object, but "
                                        f"resulting value was: {render(root)}. Type of "
                                        f"resulting value: '{type(root).__name__}'. Input "
                                        f"document: {render(doc)}")
            output.append(copy_document(root))
        return output

    return run


def _facet(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping) or not argument:
        raise StoreError(40169, "the $facet specification must be a non-empty object")
    inner = replace(context, collection=None)
    facets = {name: compile_pipeline(pipe, inner) for name, pipe in argument.items()}

    def run(docs: list[Document]) -> list[Document]:
        output: Document = {}
        for name, stages in facets.items():
            result = docs
            for stage in stages:
                result = stage(result)
            output[name] = result
        return [output]

    return run


def _lookup(argument: Any, context: PipelineContext) -> Stage:
    if not isinstance(argument, Mapping):
        raise StoreError(40319, "the $lookup stage specification must be an object")
    source, as_field = argument.get("from"), argument.get("as")
    if not isinstance(source, str) or not isinstance(as_field, str):
        raise StoreError(40321, "$lookup requires 'from' and 'as' string fields")
    local, foreign = argument.get("localField"), argument.get("foreignField")
    let = argument.get("let") or {}
    if not isinstance(let, Mapping):
        raise StoreError(9, "$lookup argument 'let' must be an object")
    let_expressions = {name: expressions.parse(value) for name, value in let.items()}
    pipeline = argument.get("pipeline", [])
    compile_pipeline(pipeline, replace(context, collection=None))

    def run(docs: list[Document]) -> list[Document]:
        foreign_docs = _documents(context, source)
        output = []
        for doc in docs:
            joined = foreign_docs
            if isinstance(local, str) and isinstance(foreign, str):
                joined = _join(doc, local, foreign, foreign_docs)
            variables = {**(context.variables or {}), **{
                name: expressions.evaluate(e, doc, context.variables)
                for name, e in let_expressions.items()}}
            for stage in compile_pipeline(pipeline, PipelineContext(
                    context.db_name, context.namespaces, variables)):
                joined = stage(joined)
            new = deep_copy(doc)
            _set_path(new, split_path(as_field), deep_copy(joined))
            output.append(new)
        return output

    return run


def _join(doc: Document, local: str, foreign: str, candidates: list[Document]) -> list[Document]:
    value = expressions.field_path(doc, split_path(local))
    values = value if isinstance(value, list) else [None if value is MISSING else value]
    predicate = compile_filter({foreign: {"$in": values or [None]}})
    return [d for d in candidates if predicate(d)]


def _documents(context: PipelineContext, name: str) -> list[Document]:
    """What a stage reading ``name`` sees: a collection's documents, a view's results."""
    if context.namespaces is None:
        return []
    return read_namespace(context.namespaces, context.namespaces.get(context.db_name, name))


def read_namespace(namespaces: Namespaces, collection: Collection | None,
                   depth: int = 0) -> list[Document]:
    """What a read of ``collection`` sees: its documents, or a view's pipeline applied to
    its source's (recursively; a missing source reads as empty)."""
    if collection is None:
        return []
    if not collection.is_view:
        return list(collection)
    if depth >= MAX_VIEW_DEPTH:
        raise StoreError(
            149, f"View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}")
    source = namespaces.get(collection.db_name, collection.options["viewOn"])
    documents = read_namespace(namespaces, source, depth + 1)
    context = PipelineContext(collection.db_name, namespaces)
    return run_pipeline(documents, collection.options.get("pipeline", []), context)


def _union_with(argument: Any, context: PipelineContext) -> Stage:
    inner = replace(context, collection=None)

    def compile_sub(pipeline: Any) -> Callable[[list[Document]], list[Document]]:
        stages = compile_pipeline(pipeline, inner)

        def run(docs: list[Document]) -> list[Document]:
            for stage in stages:
                docs = stage(docs)
            return docs

        return run

    return joins.union_with(argument, lambda name: _documents(context, name), compile_sub)


def _graph_lookup(argument: Any, context: PipelineContext) -> Stage:
    return joins.graph_lookup(argument, lambda name: _documents(context, name))


def _target(argument: Any, context: PipelineContext, stage: str) -> tuple[str, str]:
    if isinstance(argument, str):
        return context.db_name, argument
    if isinstance(argument, Mapping) and isinstance(argument.get("coll"), str):
        return str(argument.get("db", context.db_name)), str(argument["coll"])
    raise bad_value(f"{stage} needs a collection name or {{db, coll}}")


def _out(argument: Any, context: PipelineContext) -> Stage:
    db_name, name = _target(argument, context, "$out")

    def run(docs: list[Document]) -> list[Document]:
        namespaces = _namespaces(context)
        target = namespaces.get(db_name, name)
        options = dict(target.options) if target is not None else {}
        if target is not None:
            namespaces.drop(db_name, name)
        fresh = namespaces.create(db_name, name, options)
        if target is not None:
            for index in target.indexes.values():
                if index is not target.id_index:
                    fresh.add_index(index.copy())
        for doc in docs:
            fresh.insert(_with_id(doc))
        return []

    return run


def _with_id(doc: Document) -> Document:
    doc = metadata.strip_scores(doc)
    if "_id" in doc:
        return doc
    from asyncmongo.bson.objectid import ObjectId

    return {"_id": ObjectId(), **deep_copy(doc)}


def _namespaces(context: PipelineContext) -> Namespaces:
    if context.namespaces is None:
        raise bad_value("$out/$merge need a database")
    return context.namespaces


def _merge(argument: Any, context: PipelineContext) -> Stage:
    spec = {"into": argument} if isinstance(argument, str) else argument
    if not isinstance(spec, Mapping) or "into" not in spec:
        raise StoreError(40414, "BSON field '$merge.into' is missing but a required field")
    db_name, name = _target(spec["into"], context, "$merge")
    on = spec.get("on", "_id")
    on_fields = [on] if isinstance(on, str) else list(on)
    when_matched = spec.get("whenMatched", "merge")
    when_not_matched = spec.get("whenNotMatched", "insert")
    if when_matched not in ("replace", "keepExisting", "merge", "fail"):
        raise bad_value(f"Enumeration value '{when_matched}' for field 'whenMatched' is not a "
                        "valid value (pipelines are not supported by the asyncmongo store)")

    def run(docs: list[Document]) -> list[Document]:
        target = _namespaces(context).get_or_create(db_name, name)
        for doc in docs:
            _merge_one(target, _with_id(doc), on_fields, when_matched, when_not_matched)
        return []

    return run


def _merge_one(target: Any, doc: Document, on_fields: list[str], when_matched: str,
               when_not_matched: str) -> None:
    wanted = [hash_key(get_path(doc, f)) for f in on_fields]
    match = next((d for d in target if [hash_key(get_path(d, f)) for f in on_fields] == wanted),
                 None)
    if match is None:
        if when_not_matched == "fail":
            raise StoreError(13113, "$merge could not find a matching document in the target "
                                    "collection for at least one document in the source "
                                    "collection")
        if when_not_matched == "insert":
            target.insert(doc)
        return
    if when_matched == "fail":
        index = target.id_index if on_fields == ["_id"] else None
        if index is None:
            index = Index("on_fields", {f: 1 for f in on_fields})
        raise target.duplicate_error(index, tuple(get_path(doc, f) for f in on_fields))
    if when_matched == "keepExisting":
        return
    key = id_key(match["_id"])
    if when_matched == "replace":
        new = {"_id": match["_id"], **{k: v for k, v in doc.items() if k != "_id"}}
    else:
        new = {**match, **{k: v for k, v in doc.items() if k != "_id"}}
    target.replace(key, new)


def _list_search_indexes(argument: Any, context: PipelineContext) -> Stage:
    """$listSearchIndexes: a mongod without Atlas Search refuses it at parse time."""
    search_indexes.list_search_indexes_stage(argument)


def _documents_stage(argument: Any, context: PipelineContext) -> Stage:
    expression = expressions.parse(argument)

    def run(docs: list[Document]) -> list[Document]:
        value = expressions.evaluate(expression, {}, context.variables)
        if not isinstance(value, list) or not all(isinstance(d, Mapping) for d in value):
            raise StoreError(5858203, "an array of documents must be specified to $documents")
        return [copy_document(d) for d in value]

    return run


_STAGES: dict[str, Callable[[Any, PipelineContext], Stage]] = {
    "$documents": _documents_stage,
    "$match": _match,
    "$project": _project,
    "$addFields": _add_fields,
    "$set": _add_fields,
    "$unset": _unset,
    "$sort": _sort,
    "$skip": _skip,
    "$limit": _limit,
    "$group": _group,
    "$count": _count,
    "$unwind": _unwind,
    "$sortByCount": _sort_by_count,
    "$replaceRoot": _replace_root,
    "$replaceWith": _replace_with,
    "$facet": _facet,
    "$lookup": _lookup,
    "$unionWith": _union_with,
    "$graphLookup": _graph_lookup,
    "$out": _out,
    "$merge": _merge,
    search_indexes.STAGE: _list_search_indexes,
}
