"""Where jongodb is known to differ from mongod, and what mongod documents instead.

Each deviation was found by this harness and checked against the MongoDB manual (one,
``lookup-empty-array``, is a point the manual leaves open). A ``JONGODB_DEVIATIONS`` entry is
repaired: ``for_jongodb`` runs an equivalent request on jongodb and derives mongod's documented
answer from its reply, so the simulator is still compared. An ``UNSUPPORTED`` entry is a
feature jongodb refuses, or answers wrongly in a way no rewrite repairs: such a case runs on
the simulator, is counted by the entry's name, and is compared with nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from asyncmongo.bson import Decimal128, Int64
from tests.differential_server import reference
from tests.differential_server.canonical import numeric_value
from tests.differential_server.grammar import Case

__all__ = ["JONGODB_DEVIATIONS", "UNSUPPORTED", "Deviation", "for_jongodb", "unsupported"]


@dataclasses.dataclass(frozen=True, slots=True)
class Deviation:
    """One known jongodb deviation: mongod's documented behaviour and why jongodb differs."""

    name: str
    mongod: str
    reason: str


#: Deviations repaired by running an equivalent request and applying mongod's rule.
JONGODB_DEVIATIONS = {d.name: d for d in (
    Deviation("find-projection",
               "find applies its projection (inclusion keeps the named paths and _id, "
               "descending into arrays of documents; exclusion drops them)",
               "jongodb returns whole documents whatever the projection"),
    Deviation("sort-order",
               "an array field sorts by its smallest element ascending and its largest "
               "descending; an empty array sorts before null and missing; null and missing "
               "sort equal; numbers sort by value across types; embedded documents compare "
               "pair by pair, value type before field name (Comparison/Sort Order)",
               "jongodb sorts arrays and documents by other rules, missing before null, and "
               "1 and Decimal128('1') apart; a find with a sort is sorted by the manual's "
               "rule from jongodb's unsorted answer"),
    Deviation("project-field-order",
               "$project outputs _id, then the included fields in the input document's order, "
               "then computed fields in the projection's order",
               "jongodb orders fields as the projection names them; such cases compare "
               "field values, not field order"),
    Deviation("sum-of-nothing",
               "$sum over no numeric values is the int 0",
               "jongodb answers a long 0"),
    Deviation("null-comparisons",
               "{$gte: null} and {$lte: null} match null and missing fields (as {$eq: null}); "
               "{$gt: null} and {$lt: null} match nothing",
               "jongodb matches no document for $gte/$lte null"),
    Deviation("numeric-equality",
               "equality ({f: v}, $eq, $ne, $in, $nin) compares numbers by value across int, "
               "long, double and decimal (3 == 3.0 == Decimal128('3.0')); $nin with null "
               "excludes documents missing the field",
               "jongodb matches only the same numeric type and decimal spelling, and its $nin "
               "[null] keeps documents missing the field"),
    Deviation("distinct",
               "distinct keeps a nested array whole as one value, reads a numeric path part "
               "as an array index, and returns numerically equal values once",
               "jongodb flattens nested arrays, ignores index parts and keeps 3 beside 3.0"),
    Deviation("update-field-order",
               "an update adds new fields in lexicographic order of their names whatever the "
               "operators (5.0+), an upsert's document starts with _id then the filter's "
               "equality fields; existing fields keep their place",
               "jongodb adds fields operator by operator and the generated _id last"),
)}

#: Features jongodb refuses or misanswers with no equivalent request: mongod's behaviour.
UNSUPPORTED = {d.name: d for d in (
    Deviation("update-operators",
               "$mul $min $max $push $pull $pop $rename are update operators (manual: Update "
               "Operators)", "jongodb answers 'unsupported update operator' (code 14)"),
    Deviation("group-accumulators",
               "$avg $min $max $last $push $count are $group accumulators",
               "jongodb answers 'unsupported $group accumulator' (code 238)"),
    Deviation("array-comparison",
               "$gt/$gte/$lt/$lte with an array operand compare the whole array too "
               "({c: {$gt: []}} matches c: [1])", "jongodb never matches an array operand"),
    Deviation("numeric-equality-nested",
               "$group, $addToSet and $lookup treat numerically equal values as equal (3, "
               "3.0, Decimal128('3.0') form one group)",
               "jongodb compares numbers of different types as different; no rewrite "
               "spells every nested combination"),
    Deviation("document-array-equality",
               "equality with a document or array operand ({b: []}, $in [{}], $ne {}) also "
               "matches an array field holding an equal element, and compares numbers inside "
               "by value", "jongodb misses those matches"),
    Deviation("unwind-empty-array",
               "$unwind with preserveNullAndEmptyArrays outputs a document whose array is "
               "empty without the field (the manual's $unwind example, _id 2)",
               "jongodb keeps the empty array"),
    Deviation("upsert-equality-seed",
               "an upsert's base document takes the filter's equality fields, dotted ones "
               "({'a.0': 1} seeds {a: {'0': 1}}) and {f: {$eq: v}} ones too",
               "jongodb leaves dotted and $eq equality fields out of the upserted document"),
    Deviation("regex-nested-arrays",
               "$regex (and a regex in $in) matches a string field or the strings of an "
               "array, one array level deep: a string inside an array inside the array is "
               "not matched", "jongodb reaches into nested arrays"),
    Deviation("accumulator-missing",
               "$addToSet and $push skip a missing value (a document without the field adds "
               "nothing)", "jongodb adds null"),
    Deviation("inc-types",
               "$inc's result has the wider of the two numeric types (int < long < double < "
               "decimal): 4 + Decimal128('2') is Decimal128('6'), 2 + long 3 is long 5, "
               "Decimal128('2.5') + -1 is Decimal128('1.5')",
               "jongodb keeps the field's type or turns a decimal into a double"),
    Deviation("lookup-empty-array",
               "the manual does not say what a $lookup localField holding [] matches; mongod's "
               "lookup builds its $in from the values at localField and, finding none, "
               "matches null (as for a missing localField); the simulator does so",
               "jongodb matches nothing; no documented answer to record"),
    Deviation("document-comparison",
               "$gt/$gte/$lt/$lte with a document operand compare documents pair by pair "
               "({b: {$lte: {b: true}}} matches b: {a: 0.5})",
               "jongodb never matches a document operand"),
    Deviation("null-in-arrays",
               "{'a.b': null} (and $in [null]) matches an array at a holding a document "
               "without b (Query for Null or Missing Fields)",
               "jongodb matches only documents where the whole path is null or missing"),
    Deviation("missing-field-path",
               "an expression naming a missing field is missing: $project/$addFields leave "
               "the field out (and $addFields removes it)",
               "jongodb sets the field to null"),
    Deviation("project-dotted-arrays",
               "$project of a dotted path applies to each document in an array (and to "
               "nested arrays)", "jongodb drops the array field"),
    Deviation("aggregate-sort-order",
               "$sort orders as find's sort does (see sort-order)",
               "jongodb's order differs for arrays, documents, null/missing and mixed "
               "numbers; a pipeline's later stages keep no jongodb answer to sort"),
    Deviation("addToSet-null",
               "$addToSet adds null like any other value ({$addToSet: {a: null}} makes a: "
               "[null])", "jongodb drops the connection (a NullPointerException in its "
               "update code)"),
    Deviation("expressions",
               "$project/$addFields evaluate operator expressions ($add, $cond, $ifNull, "
               "$type, $size, $literal ...)",
               "jongodb stores the expression document itself as the field's value"),
)}


def _paths_reach_arrays(case: Case) -> bool:
    for document in case.documents:
        for path in case.spec.get("sort", {}):
            if any(isinstance(value, list | dict)
                   for value in _along(document, path.split("."))):
                return True
    return False


def _along(value: Any, parts: list[str]) -> list[Any]:
    """Every value met along a dotted path (arrays included, to see whether one is met)."""
    if isinstance(value, list):
        return [value, *(found for item in value for found in _along(item, parts))]
    if not parts or not isinstance(value, dict) or parts[0] not in value:
        return []
    item = value[parts[0]]
    return [item, *_along(item, parts[1:])] if parts[1:] else [item]


def _mentions_null_comparison(query: Any) -> bool:
    return reference.rewrite_null_comparisons(query) != query


def _operator_expression(value: Any) -> bool:
    return isinstance(value, dict) and any(key.startswith("$") for key in value)


def _operands(query: Any, operators: tuple[str, ...]) -> list[Any]:
    """The operands of the given operators anywhere in a filter (``"="`` for ``{f: v}``)."""
    found: list[Any] = []
    if isinstance(query, list):
        for item in query:
            found += _operands(item, operators)
    elif isinstance(query, dict):
        for key, item in query.items():
            if key in operators or ("=" in operators and not key.startswith("$") and not (
                    isinstance(item, dict) and item and all(k.startswith("$") for k in item))):
                found.append(item)
            if isinstance(item, dict | list):
                found += _operands(item, operators)
    return found


def _holds_number(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_number(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_number(item) for item in value)
    return numeric_value(value) is not None


def _holds_null(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_null(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_null(item) for item in value)
    return value is None


def _numbers(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [number for item in value.values() for number in _numbers(item)]
    if isinstance(value, list):
        return [number for item in value for number in _numbers(item)]
    return [value] if numeric_value(value) is not None else []


def _mixed_numbers(case: Case) -> bool:
    """Whether some value appears in two numeric types or decimal spellings."""
    spellings: dict[Any, set[str]] = {}
    for number in _numbers([case.documents, case.spec]):
        spellings.setdefault(numeric_value(number), set()).add(
            f"{type(number).__name__}:{number}")
    return any(len(spelled) > 1 for spelled in spellings.values())


def _filters(case: Case) -> list[Any]:
    if case.kind == "aggregate":
        return [stage["$match"] for stage in case.spec["pipeline"] if "$match" in stage]
    return [case.spec["filter"]]


def _null_in_arrays(case: Case, query: Any) -> bool:
    """Whether a dotted path compared with null crosses an array in some document."""
    paths = [path for path, condition in _conditions(query)
             if "." in path and (condition is None or _holds_null(condition))]
    return any(isinstance(value, list) for path in paths for document in case.documents
               for value in _along(document, path.split(".")[:-1]))


def _regex_over_nested_arrays(case: Case, query: Any) -> bool:
    """Whether a path matched with a regex holds an array inside an array somewhere."""
    paths = [path for path, condition in _conditions(query) if "$regex" in repr(condition)
             or "re.compile" in repr(condition)]
    return any(isinstance(value, list) for path in paths for document in case.documents
               for value in reference.path_values(document, path.split(".")))


def _mixed_inc_types(case: Case) -> bool:
    """Whether an $inc meets a number of another type than its operand's."""
    for path, operand in case.spec["update"].get("$inc", {}).items():
        kinds = {type(operand)} | {type(number) for document in case.documents
                                   for number in _numbers(reference.path_values(
                                       document, path.split(".")))}
        if len(kinds) > 1 or isinstance(operand, Decimal128):
            return True
    return False


def _conditions(query: Any) -> list[tuple[str, Any]]:
    """Every (path, condition) pair in a filter, inside logical operators too."""
    found: list[tuple[str, Any]] = []
    if isinstance(query, list):
        for item in query:
            found += _conditions(item)
    elif isinstance(query, dict):
        for key, item in query.items():
            if key.startswith("$"):
                found += _conditions(item)
            else:
                found.append((key, item))
    return found


def _field_paths(value: Any) -> list[str]:
    if isinstance(value, str) and value.startswith("$") and not value.startswith("$$"):
        return [value[1:]]
    if isinstance(value, dict):
        return [path for item in value.values() for path in _field_paths(item)]
    if isinstance(value, list):
        return [path for item in value for path in _field_paths(item)]
    return []


def _reaches_empty_array(case: Case, path: str) -> bool:
    return any(value == [] for document in case.documents
               for value in _along(document, path.split(".")))


def _aggregate_unsupported(case: Case) -> str | None:
    pipeline = case.spec["pipeline"]
    for stage in pipeline:
        shaping = stage.get("$project") or stage.get("$addFields") or {}
        if any(_operator_expression(value) for value in shaping.values()):
            return "expressions"
        if any(not reference.path_values(document, path.split("."))
               for path in _field_paths(shaping) for document in case.documents):
            return "missing-field-path"
        accumulated = [spec["$addToSet"] for spec in stage.get("$group", {}).values()
                       if isinstance(spec, dict) and isinstance(spec.get("$addToSet"), str)]
        if any(not reference.path_values(document, path[1:].split("."))
               for path in accumulated for document in case.documents):
            return "accumulator-missing"
        if "$project" in stage and any("." in path for path in stage["$project"]):
            return "project-dotted-arrays"
        if "$sort" in stage:
            return "aggregate-sort-order"
        unwind = stage.get("$unwind")
        if isinstance(unwind, dict) and _reaches_empty_array(case, unwind["path"][1:]):
            return "unwind-empty-array"
        lookup = stage.get("$lookup")
        if lookup and _reaches_empty_array(case, lookup["localField"]):
            return "lookup-empty-array"
    return None


def unsupported(case: Case) -> str | None:
    """The ``UNSUPPORTED`` entry that makes the case incomparable on jongodb, if any."""
    for query in _filters(case):
        if any(isinstance(operand, list)
               for operand in _operands(query, ("$gt", "$gte", "$lt", "$lte"))):
            return "array-comparison"
        if any(isinstance(operand, dict)
               for operand in _operands(query, ("$gt", "$gte", "$lt", "$lte"))):
            return "document-comparison"
        if _null_in_arrays(case, query):
            return "null-in-arrays"
        if _regex_over_nested_arrays(case, query):
            return "regex-nested-arrays"
        equality = _operands(query, ("=", "$eq", "$ne", "$all"))
        equality += [item for values in _operands(query, ("$in", "$nin")) for item in values]
        if any(isinstance(operand, dict | list) for operand in equality):
            return "document-array-equality"
        if any(_holds_number(operand) for operand in _operands(query, ("$all",))):
            return "numeric-equality-nested"
    joins = case.kind == "aggregate" and any(
        "$group" in stage or "$lookup" in stage for stage in case.spec["pipeline"])
    if (joins or (case.kind == "update" and "$addToSet" in case.spec["update"])) and \
            _mixed_numbers(case):
        return "numeric-equality-nested"
    if case.kind == "update":
        if case.spec["upsert"] and any(
                "." in path or (isinstance(condition, dict) and "$eq" in condition)
                for path, condition in _conditions(case.spec["filter"])):
            return "upsert-equality-seed"
        if _mixed_inc_types(case):
            return "inc-types"
        if _holds_null(case.spec["update"].get("$addToSet", {})):
            return "addToSet-null"
        if set(case.spec["update"]) - {"$set", "$unset", "$inc", "$addToSet", "$setOnInsert"}:
            return "update-operators"
    if case.kind == "aggregate":
        for stage in case.spec["pipeline"]:
            if "$group" in stage and any(
                    next(iter(spec)) not in ("$sum", "$first", "$addToSet")
                    for key, spec in stage["$group"].items() if key != "_id"):
                return "group-accumulators"
    return _aggregate_unsupported(case) if case.kind == "aggregate" else None


Fixup = Callable[[Any], Any]


def _expand(filter_or_pipeline: Any) -> Any:
    """``reference.expand_numeric_equality`` on a filter or on each ``$match`` of a pipeline."""
    if isinstance(filter_or_pipeline, dict):
        return reference.expand_numeric_equality(filter_or_pipeline)
    return [{"$match": reference.expand_numeric_equality(stage["$match"])}
            if "$match" in stage else stage for stage in filter_or_pipeline]


def _mongod_field_order(case: Case, document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as an update leaves it on mongod: existing (or, for an upsert, _id and
    the filter's equality) fields first in their order, added fields sorted by name."""
    originals = {original["_id"]: original for original in case.documents}
    original = originals.get(document["_id"])
    if original is None:
        base = ["_id", *(path for path, condition in _conditions(case.spec["filter"])
                         if not (isinstance(condition, dict) and condition and
                                 all(key.startswith("$") for key in condition)))]
    else:
        base = list(original)
    kept = [key for key in base if key in document]
    added = sorted(key for key in document if key not in kept)
    return {key: document[key] for key in [*kept, *added]}


def _sums_without_longs(case: Case) -> bool:
    """Whether the pipeline $sums paths that hold no long in any document."""
    paths = [spec["$sum"][1:] for stage in case.spec["pipeline"] if "$group" in stage
             for spec in stage["$group"].values()
             if isinstance(spec, dict) and isinstance(spec.get("$sum"), str)]
    return bool(paths) and not any(
        isinstance(number, Int64) for path in paths for document in case.documents
        for number in _numbers(_along(document, path.split("."))))


def _zero_sums(documents: Any) -> Any:
    """jongodb's long 0 for a $sum over no numbers, as mongod's int 0."""
    return [{key: 0 if key.startswith("sum") and isinstance(value, Int64) and value == 0
             else value for key, value in document.items()} for document in documents]


def sorted_fields(value: Any) -> Any:
    """``value`` with every document's fields sorted by name (arrays keep their order)."""
    if isinstance(value, dict):
        return {key: sorted_fields(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_fields(item) for item in value]
    return value


def field_order_compared(case: Case) -> bool:
    """False where the field order of the answer is a listed jongodb deviation."""
    return not (case.kind == "aggregate" and any(
        "$project" in stage for stage in case.spec["pipeline"]))


def for_jongodb(case: Case) -> tuple[Case, Fixup, list[str]]:
    """The case as jongodb runs it, the function deriving mongod's answer from jongodb's
    reply, and the names of the deviations applied."""
    spec = dict(case.spec)
    applied: list[str] = []
    steps: list[Fixup] = []
    for key in ("filter", "pipeline"):
        if key in spec and _mentions_null_comparison(spec[key]):
            spec[key] = reference.rewrite_null_comparisons(spec[key])
            applied.append("null-comparisons")
        expanded = _expand(spec[key]) if key in spec else None
        if key in spec and expanded != spec[key]:
            spec[key] = expanded
            applied.append("numeric-equality")
    kind = case.kind
    if case.kind == "distinct":
        key_path = spec.pop("key")
        kind = "find"
        applied.append("distinct")
        steps.append(lambda documents: reference.distinct(documents, key_path))
    if not field_order_compared(case):
        applied.append("project-field-order")
    if case.kind == "aggregate" and _sums_without_longs(case):
        applied.append("sum-of-nothing")
        steps.append(_zero_sums)
    if case.kind == "update":
        applied.append("update-field-order")
        steps.append(lambda reply: [reply[0], *(
            _mongod_field_order(case, document) for document in reply[1:])])
    if case.kind == "find" and spec.get("sort"):
        sort, skip, limit = spec.pop("sort"), spec.pop("skip", 0), spec.pop("limit", 0)
        applied.append("sort-order")
        steps.append(lambda documents: reference.sort_documents(documents, sort)[
            skip:skip + limit if limit else None])
    if case.kind == "find" and spec.get("projection"):
        projection = spec.pop("projection")
        applied.append("find-projection")
        steps.append(lambda documents: [reference.project(document, projection)
                                        for document in documents])

    def fixup(raw: Any) -> Any:
        for step in steps:
            raw = step(raw)
        return raw
    return dataclasses.replace(case, kind=kind, spec=spec), fixup, applied
