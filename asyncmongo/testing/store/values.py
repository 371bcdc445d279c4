"""Fast helpers over BSON values held as Python objects: a deep copy that copies only the
mutable containers, and strict equality (same BSON types, same field order)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def deep_copy(value: Any) -> Any:
    """A copy of documents and arrays; every other BSON value is immutable and shared."""
    if isinstance(value, dict):
        return {k: deep_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    if isinstance(value, Mapping):
        return {k: deep_copy(v) for k, v in value.items()}
    return value


def same_bson(a: Any, b: Any) -> bool:
    """True if ``a`` and ``b`` encode to the same BSON (types, values and field order)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_bson(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same_bson(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, int) and not -(2**31) <= a < 2**31 and -(2**31) <= b < 2**31:
        return False
    return bool(a == b)


def copy_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a document, as a plain dict."""
    return {k: deep_copy(v) for k, v in document.items()}


def approximate_size(value: Any) -> int:
    """A cheap estimate of a value's BSON size (used to cut batches near 16 MiB)."""
    if isinstance(value, dict | list):
        items = value.values() if isinstance(value, dict) else value
        keys = sum(len(k) + 2 for k in value) if isinstance(value, dict) else 3 * len(value)
        return 5 + keys + sum(approximate_size(v) for v in items)
    if isinstance(value, str | bytes):
        return 5 + len(value)
    return 8
