"""mongod's documented semantics for the places where jongodb answers wrongly: BSON
comparison order, sort keys of arrays, find projections, and comparisons with null.

Written from the MongoDB manual (Comparison/Sort Order, Project Fields to Return from Query,
Query for Null or Missing Fields), independently of the simulator's own implementation.
"""

from __future__ import annotations

import datetime
import functools
import re
from typing import Any

from asyncmongo.bson import Decimal128, Int64, ObjectId, Regex
from tests.differential_server.canonical import numeric_value

__all__ = ["compare_values", "distinct", "expand_numeric_equality", "path_values", "project",
           "rewrite_null_comparisons", "sort_documents"]

_MISSING = object()
_EMPTY_ARRAY_KEY = object()


def _rank(value: Any) -> int:
    """The manual's BSON comparison order (MinKey ... MaxKey); null and missing share a rank
    and an empty array's sort key ranks below both."""
    if value is _EMPTY_ARRAY_KEY:
        return 0
    if value is None or value is _MISSING:
        return 2
    if isinstance(value, bool):
        return 9
    if numeric_value(value) is not None or isinstance(value, float | Decimal128):
        return 3
    if isinstance(value, str):
        return 4
    if isinstance(value, dict):
        return 5
    if isinstance(value, list):
        return 6
    if isinstance(value, bytes):
        return 7
    if isinstance(value, ObjectId):
        return 8
    if isinstance(value, datetime.datetime):
        return 10
    if isinstance(value, re.Pattern | Regex):
        return 12
    raise TypeError(f"no BSON rank for {value!r}")


def _sign(left: Any, right: Any) -> int:
    return (left > right) - (left < right)


def compare_values(left: Any, right: Any) -> int:
    """-1, 0 or 1: the manual's comparison of two BSON values (numbers by value across
    types, strings by code point, documents pair by pair, arrays element by element)."""
    ranks = _sign(_rank(left), _rank(right))
    if ranks or _rank(left) in (0, 2):
        return ranks
    if _rank(left) == 3:
        return _sign(numeric_value(left), numeric_value(right))
    if isinstance(left, dict):
        for (left_key, left_item), (right_key, right_item) in zip(
                left.items(), right.items(), strict=False):
            order = (_sign(_rank(left_item), _rank(right_item)) or _sign(left_key, right_key)
                     or compare_values(left_item, right_item))
            if order:
                return order
        return _sign(len(left), len(right))
    if isinstance(left, list):
        for left_item, right_item in zip(left, right, strict=False):
            order = compare_values(left_item, right_item)
            if order:
                return order
        return _sign(len(left), len(right))
    if isinstance(left, datetime.datetime):
        return _sign(left.replace(tzinfo=None), right.replace(tzinfo=None))
    if isinstance(left, ObjectId):
        return _sign(left.binary, right.binary)
    return _sign(left, right)


def path_values(value: Any, parts: list[str]) -> list[Any]:
    """The values a dotted path reaches, descending into arrays of documents; a leaf array
    contributes its elements (and an empty one the empty-array key)."""
    if not parts:
        if isinstance(value, list):
            return list(value) if value else [_EMPTY_ARRAY_KEY]
        return [value]
    if isinstance(value, dict):
        return path_values(value[parts[0]], parts[1:]) if parts[0] in value else []
    if isinstance(value, list):
        return [found for item in value if isinstance(item, dict)
                for found in path_values(item, parts)]
    return []


def _sort_key(document: dict[str, Any], path: str, direction: int) -> Any:
    """An ascending sort uses the smallest value the path reaches, a descending one the
    largest; a path reaching nothing sorts as null."""
    values = path_values(document, path.split(".")) or [None]
    pick = min if direction == 1 else max
    return pick(values, key=functools.cmp_to_key(compare_values))


def sort_documents(documents: list[dict[str, Any]], sort: dict[str, int]) -> list[dict[str, Any]]:
    def order(left: dict[str, Any], right: dict[str, Any]) -> int:
        for path, direction in sort.items():
            result = compare_values(_sort_key(left, path, direction),
                                    _sort_key(right, path, direction))
            if result:
                return result * direction
        return 0
    return sorted(documents, key=functools.cmp_to_key(order))


def _tree(projection: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in projection:
        node = tree
        *parents, leaf = path.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = True
    return tree


def _include(value: Any, tree: dict[str, Any], nested: bool = False) -> Any:
    """Inclusion below a path: documents keep the included fields (possibly none), arrays
    keep their documents, other values drop out; find does not recurse into an array
    nested in an array, so such an array drops out too."""
    if nested and isinstance(value, list):
        return _MISSING
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in tree:
                if tree[key] is True:
                    out[key] = item
                else:
                    kept = _include(item, tree[key])
                    if kept is not _MISSING:
                        out[key] = kept
        return out
    if isinstance(value, list):
        return [kept for item in value
                if (kept := _include(item, tree, nested=True)) is not _MISSING]
    return _MISSING


def _exclude(value: Any, tree: dict[str, Any]) -> Any:
    """Exclusion below a path; an array nested in an array stays whole (find)."""
    if isinstance(value, dict):
        return {key: (item if key not in tree else _exclude(item, tree[key]))
                for key, item in value.items() if tree.get(key) is not True}
    if isinstance(value, list):
        return [item if isinstance(item, list) else _exclude(item, tree) for item in value]
    return value


def project(document: dict[str, Any], projection: dict[str, Any]) -> dict[str, Any]:
    """A find projection of 1s or of 0s (``_id`` included unless excluded)."""
    paths = {path: flag for path, flag in projection.items() if path != "_id"}
    keep_id = projection.get("_id", 1) != 0
    if paths and next(iter(paths.values())):
        tree = _tree(paths)
        if keep_id:
            tree["_id"] = True
        result: dict[str, Any] = _include(document, tree)
        return result
    tree = _tree(paths)
    if not keep_id:
        tree["_id"] = True
    excluded: dict[str, Any] = _exclude(document, tree)
    return excluded


def rewrite_null_comparisons(query: Any) -> Any:
    """The same filter with ``$gte: null``/``$lte: null`` spelled ``$eq: null`` and
    ``$gt: null``/``$lt: null`` spelled ``$in: []``: the manual's meaning of each (null
    ranks below every other type, and equality with null also matches a missing field)."""
    if isinstance(query, list):
        return [rewrite_null_comparisons(item) for item in query]
    if not isinstance(query, dict):
        return query
    rewritten: dict[str, Any] = {}
    for key, item in query.items():
        if key in ("$gte", "$lte") and item is None:
            rewritten["$eq"] = None
        elif key in ("$gt", "$lt") and item is None:
            rewritten["$in"] = []
        else:
            rewritten[key] = rewrite_null_comparisons(item)
    return rewritten


def _numeric_variants(value: Any) -> list[Any]:
    """``value`` in every numeric type and decimal spelling the grammar uses: the values
    mongod's equality treats as ``value``."""
    number = numeric_value(value)
    if number is None or isinstance(value, bool):
        return [value]
    variants: list[Any] = [float(number)]
    if number.denominator == 1:
        integer = int(number)
        variants += [integer, Int64(integer), Decimal128(str(integer)),
                     Decimal128(f"{integer}.0")]
    else:
        variants.append(Decimal128(str(float(number))))
    return variants


def _scalar_number(value: Any) -> bool:
    return numeric_value(value) is not None


def expand_numeric_equality(query: Any, in_operator: bool = False) -> Any:
    """The same filter with each numeric equality operand (``{f: 3}``, ``$eq``, ``$ne``,
    ``$in``, ``$nin``) replaced by all its numeric spellings, ``$nin`` with null split into
    ``$nin`` plus ``$ne: null`` and ``$all`` with null into ``$all`` plus ``$eq: null``
    ($all is an $and of equalities): the manual's equality by value across numeric types and
    its null-matches-missing rule, in a form that needs neither."""
    if isinstance(query, list):
        return [expand_numeric_equality(item) for item in query]
    if not isinstance(query, dict):
        return query
    rewritten: dict[str, Any] = {}
    for key, item in query.items():
        if key in ("$and", "$or", "$nor"):
            rewritten[key] = [expand_numeric_equality(clause) for clause in item]
        elif key in ("$not", "$elemMatch"):
            rewritten[key] = expand_numeric_equality(item, in_operator=key == "$not")
        elif key in ("$eq", "$ne") and _scalar_number(item):
            rewritten["$in" if key == "$eq" else "$nin"] = _numeric_variants(item)
        elif key == "$all" and None in item:
            rewritten["$eq"] = None
            if [value for value in item if value is not None]:
                rewritten["$all"] = [value for value in item if value is not None]
        elif key in ("$in", "$nin"):
            values = [variant for value in item for variant in _numeric_variants(value)]
            if key == "$nin" and None in values:
                rewritten["$ne"] = None
                values = [value for value in values if value is not None]
            rewritten[key] = values
        elif not key.startswith("$") and not in_operator and _scalar_number(item):
            rewritten[key] = {"$in": _numeric_variants(item)}
        elif not key.startswith("$") and not in_operator and isinstance(item, dict) and \
                item and all(name.startswith("$") for name in item):
            rewritten[key] = expand_numeric_equality(item, in_operator=True)
        else:
            rewritten[key] = item
    return rewritten


def distinct(documents: list[dict[str, Any]], key: str) -> list[Any]:
    """distinct's values: every value the path reaches (a numeric part indexes an array, a
    leaf array gives its elements, nested arrays stay whole), equal values once."""
    found: list[Any] = []
    for document in documents:
        for value in _distinct_values(document, key.split(".")):
            if not any(compare_values(value, seen) == 0 and _rank(value) == _rank(seen)
                       for seen in found):
                found.append(value)
    return found


def _distinct_values(value: Any, parts: list[str]) -> list[Any]:
    if not parts:
        return list(value) if isinstance(value, list) else [value]
    head, rest = parts[0], parts[1:]
    if isinstance(value, dict):
        return _distinct_values(value[head], rest) if head in value else []
    if isinstance(value, list):
        if head.isdigit() and int(head) < len(value):
            return _distinct_values(value[int(head)], rest)
        return [found for item in value if isinstance(item, dict)
                for found in _distinct_values(item, parts)]
    return []
