"""Python values -> the JSON-ready tree of Extended JSON (specs/extended-json, "Generators").

:func:`to_extended_json` maps every value the BSON codec encodes onto plain dicts, lists,
strings, numbers, booleans and None, using the type wrappers of the spec's conversion table
in canonical or relaxed form. ``json.dumps`` then only has to print the tree.
"""

from __future__ import annotations

import base64
import math
import re
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from asyncmongo.bson._json_options import JSONMode, JSONOptions
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import InvalidDocument
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import (
    Code,
    DatetimeMS,
    DBPointer,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
    datetime_to_ms,
)

__all__ = ["to_extended_json"]

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
# Relaxed format writes ISO-8601 only for years 1970..9999 (spec conversion table).
_ISO_MAX_MS: Final = 253_402_300_799_999

Fallback = Callable[[Any], Any] | None


def to_extended_json(value: Any, options: JSONOptions, fallback: Fallback = None) -> Any:
    """The Extended JSON tree of ``value``.

    A value of a type with no BSON equivalent raises :class:`InvalidDocument`, unless
    ``fallback`` is given (``json.dumps``'s ``default``), in which case it is left in the tree
    for ``json.dumps`` to hand to that function.
    """
    return _Encoder(options, fallback).convert(value)


class _Encoder:
    """One conversion: the options, and a type dispatch resolved once per class."""

    __slots__ = ("canonical", "fallback", "options")

    def __init__(self, options: JSONOptions, fallback: Fallback) -> None:
        self.options = options
        self.canonical = options.json_mode == JSONMode.CANONICAL
        self.fallback = fallback

    def convert(self, value: Any) -> Any:
        # Order matters: bool before int, the str/bytes/int subclasses before their bases.
        if value is None or value is True or value is False:
            return value
        if isinstance(value, str):
            return self._string(value)
        if isinstance(value, int):
            return self._integer(value)
        if isinstance(value, float):
            return self._double(value)
        if isinstance(value, Mapping):
            return self._document(value)
        if isinstance(value, list | tuple):
            return [self.convert(item) for item in value]
        if isinstance(value, bytes | bytearray | memoryview):
            return self._binary(value)
        return self._special(value)

    def _string(self, value: str) -> Any:
        if isinstance(value, Symbol):
            return {"$symbol": str(value)}
        if isinstance(value, Code):
            if value.scope is None:
                return {"$code": str(value)}
            return {"$code": str(value), "$scope": self._document(value.scope)}
        return str(value)

    def _integer(self, value: int) -> Any:
        if isinstance(value, DatetimeMS):
            return self._date(int(value))
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise InvalidDocument(f"integer {value} does not fit in a BSON int64")
        if not self.canonical:
            return int(value)
        if isinstance(value, Int64) or not _INT32_MIN <= value <= _INT32_MAX:
            return {"$numberLong": str(int(value))}
        return {"$numberInt": str(int(value))}

    def _double(self, value: float) -> Any:
        if math.isnan(value):
            return {"$numberDouble": "NaN"}
        if math.isinf(value):
            return {"$numberDouble": "Infinity" if value > 0 else "-Infinity"}
        if self.canonical:
            # repr is the shortest string that reads back to the same double.
            return {"$numberDouble": repr(float(value)).replace("e", "E")}
        return float(value)

    def _document(self, value: Mapping[Any, Any]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidDocument(
                    f"document keys must be str, not {type(key).__name__}: {key!r}"
                )
            result[key] = self.convert(item)
        return result

    def _binary(self, value: bytes | bytearray | memoryview, subtype: int = 0) -> Any:
        if isinstance(value, Binary):
            subtype = value.subtype
        payload = base64.b64encode(bytes(value)).decode("ascii")
        return {"$binary": {"base64": payload, "subType": f"{subtype:02x}"}}

    def _date(self, ms: int) -> Any:
        if self.canonical or not 0 <= ms <= _ISO_MAX_MS:
            return {"$date": {"$numberLong": str(ms)}}
        moment = _EPOCH + timedelta(milliseconds=ms)
        text = moment.strftime("%Y-%m-%dT%H:%M:%S")
        if ms % 1000:
            text += f".{ms % 1000:03d}"
        return {"$date": text + "Z"}

    def _special(self, value: Any) -> Any:
        handler = _SPECIAL.get(type(value))
        if handler is None:
            handler = next((h for cls, h in _SPECIAL.items() if isinstance(value, cls)), None)
        if handler is not None:
            return handler(self, value)
        if self.fallback is not None:
            return value
        raise InvalidDocument(
            f"cannot write {type(value).__name__} as Extended JSON: it has no BSON type"
        )


def _object_id(encoder: _Encoder, value: ObjectId) -> Any:
    return {"$oid": str(value)}


def _decimal128(encoder: _Encoder, value: Decimal128) -> Any:
    return {"$numberDecimal": str(value)}


def _datetime(encoder: _Encoder, value: datetime) -> Any:
    return encoder._date(datetime_to_ms(value))


def _uuid(encoder: _Encoder, value: uuid.UUID) -> Any:
    # UNSPECIFIED refuses, as the UUID spec requires (InvalidBinary says what to do).
    return encoder._binary(Binary.from_uuid(value, encoder.options.uuid_representation))


def _timestamp(encoder: _Encoder, value: Timestamp) -> Any:
    return {"$timestamp": {"t": value.time, "i": value.inc}}


def _regex(encoder: _Encoder, value: Regex) -> Any:
    # Extended JSON: regular expression options MUST be in alphabetical order.
    options = "".join(sorted(value.flags))
    return {"$regularExpression": {"pattern": value.pattern, "options": options}}


def _pattern(encoder: _Encoder, value: re.Pattern[str]) -> Any:
    if not isinstance(value.pattern, str):
        raise InvalidDocument("a bytes regular expression has no BSON form; use a str pattern")
    return _regex(encoder, Regex.from_native(value))


def _dbref(encoder: _Encoder, value: DBRef) -> Any:
    return encoder._document(value.as_doc())


def _dbpointer(encoder: _Encoder, value: DBPointer) -> Any:
    return {"$dbPointer": {"$ref": value.namespace, "$id": {"$oid": str(value.id)}}}


def _min_key(encoder: _Encoder, value: MinKey) -> Any:
    return {"$minKey": 1}


def _max_key(encoder: _Encoder, value: MaxKey) -> Any:
    return {"$maxKey": 1}


def _undefined(encoder: _Encoder, value: Undefined) -> Any:
    return {"$undefined": True}


_SPECIAL: Final[dict[type, Callable[[_Encoder, Any], Any]]] = {
    ObjectId: _object_id,
    Decimal128: _decimal128,
    datetime: _datetime,
    uuid.UUID: _uuid,
    Timestamp: _timestamp,
    Regex: _regex,
    re.Pattern: _pattern,
    DBRef: _dbref,
    DBPointer: _dbpointer,
    MinKey: _min_key,
    MaxKey: _max_key,
    Undefined: _undefined,
}
