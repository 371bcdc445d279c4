"""Sort specifications (``{a: 1, b: -1}``) as comparison functions, MongoDB style.

An array field sorts by its smallest element ascending and its largest descending; a missing
field sorts as null; ties keep insertion order (Python's sort is stable).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from asyncmongo.testing.store import metadata
from asyncmongo.testing.store.compare import compare, is_number, number_value
from asyncmongo.testing.store.errors import StoreError, bad_value
from asyncmongo.testing.store.metadata import TEXT_SCORE
from asyncmongo.testing.store.paths import sort_values

Comparator = Callable[[Any, Any], int]


def parse_sort(spec: Any) -> list[tuple[str, int]]:
    """Validate a sort document into (path, direction) pairs."""
    if not isinstance(spec, Mapping):
        raise bad_value("sort must be an object")
    keys: list[tuple[str, int]] = []
    for path, direction in spec.items():
        if isinstance(direction, Mapping):
            if list(direction) != ["$meta"]:
                raise StoreError(17312, "$meta is the only expression supported by $sort right "
                                        "now")
            metadata.check_meta(direction["$meta"])
            keys.append((TEXT_SCORE, -1))  # highest score first, as mongod sorts it
            continue
        if not is_number(direction) or number_value(direction) not in (1, -1):
            raise StoreError(15975, "$sort key ordering must be 1 (for ascending) or -1 (for "
                                    "descending)")
        keys.append((path, int(number_value(direction))))
    return keys


def _sort_key(document: Any, path: str, direction: int) -> Any:
    if path == TEXT_SCORE:
        return metadata.meta_score(document)
    values = sort_values(document, path) if isinstance(document, Mapping) else []
    if not values:
        return None
    best = values[0]
    for value in values[1:]:
        if compare(value, best) * direction < 0:
            best = value
    return best


def compile_sort(spec: Any, *, documents_only: bool = True) -> Comparator:
    """A comparator for ``spec`` (use with ``functools.cmp_to_key``)."""
    keys = parse_sort(spec)

    def comparator(a: Any, b: Any) -> int:
        for path, direction in keys:
            result = compare(_sort_key(a, path, direction), _sort_key(b, path, direction))
            if result:
                return result * direction
        return 0

    return comparator


def sort_documents(documents: list[Any], spec: Any) -> list[Any]:
    """``documents`` sorted by ``spec`` (a new list; None or {} keeps the order)."""
    if not spec:
        return list(documents)
    return sorted(documents, key=functools.cmp_to_key(compile_sort(spec)))
