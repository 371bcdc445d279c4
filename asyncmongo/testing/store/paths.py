"""Dotted paths into documents and arrays, with MongoDB's array semantics.

A query path such as ``a.b`` reaches into every document element of an array at ``a``
(``{a: [{b: 1}, {b: 2}]}`` yields 1 and 2), and a numeric component indexes an array
(``a.0``). :data:`MISSING` stands for "no value here" so ``{a: null}`` can match a missing
field and ``$exists`` can tell the two apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from asyncmongo.bson import Undefined


class _Missing:
    """The absence of a value at a path."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


def split_path(path: str) -> list[str]:
    """The components of a dotted path."""
    return path.split(".")


def collect(value: Any, parts: list[str], out: list[Any] | None = None) -> list[Any]:
    """Every value a query path reaches in ``value`` (MISSING where a branch has none)."""
    if out is None:
        out = []
    _collect(value, parts, 0, out)
    return out


def _collect(value: Any, parts: list[str], i: int, out: list[Any]) -> None:
    if i == len(parts):
        out.append(value)
        return
    key = parts[i]
    if isinstance(value, Mapping):
        if key in value:
            _collect(value[key], parts, i + 1, out)
        else:
            out.append(MISSING)
    elif isinstance(value, list):
        _collect_from_array(value, parts, i, out)
    else:
        out.append(MISSING)


def _collect_from_array(value: list[Any], parts: list[str], i: int, out: list[Any]) -> None:
    before = len(out)
    key = parts[i]
    if key.isdigit():
        index = int(key)
        if index < len(value):
            _collect(value[index], parts, i + 1, out)
    for element in value:
        if isinstance(element, Mapping):
            if key.isdigit():
                # A numeric component is first an index; as a field name of the embedded
                # documents it only adds values it finds, never "missing".
                found: list[Any] = []
                _collect(element, parts, i, found)
                out.extend(v for v in found if v is not MISSING)
            else:
                _collect(element, parts, i, out)
    if len(out) == before:
        out.append(MISSING)


def get_path(document: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` without array expansion (numeric components index arrays)."""
    value: Any = document
    for key in split_path(path):
        if isinstance(value, Mapping):
            if key not in value:
                return MISSING
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return MISSING
    return value


def sort_values(document: Mapping[str, Any], path: str) -> list[Any]:
    """The values a sort on ``path`` considers (leaf arrays contribute their elements).

    An empty leaf array contributes ``undefined``, which ranks below null: the manual's
    "a comparison of an empty array considers the empty array as less than a null value or
    a missing field value" (Comparison/Sort Order).
    """
    values: list[Any] = []
    for value in collect(document, split_path(path)):
        if isinstance(value, list):
            values.extend(value if value else [Undefined()])
        elif value is not MISSING:
            values.append(value)
    return values
