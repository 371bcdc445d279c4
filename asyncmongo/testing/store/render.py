"""Values rendered as the server prints them in error messages (``{a: 1}``, ``{ a: 1 }``)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import Int64, Timestamp


def render(value: Any, *, spaced: bool = False) -> str:
    """Compact (``{a: 1}``) or spaced (``{ a: 1 }``, as in duplicate key messages)."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k}: {render(v, spaced=spaced)}" for k, v in value.items())
        if not inner:
            return "{}"
        return f"{{ {inner} }}" if spaced else f"{{{inner}}}"
    if isinstance(value, list):
        inner = ", ".join(render(v, spaced=spaced) for v in value)
        return f"[ {inner} ]" if spaced and inner else f"[{inner}]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, float):
        return repr(value) if value == value else "nan.0"
    if isinstance(value, Int64):
        return str(int(value))
    if isinstance(value, ObjectId):
        return f"ObjectId('{value}')"
    if isinstance(value, Decimal128):
        return f'NumberDecimal("{value}")'
    if isinstance(value, datetime.datetime):
        return f"new Date({value.isoformat()})"
    if isinstance(value, Timestamp):
        return f"Timestamp({value.time}, {value.inc})"
    return str(value)
