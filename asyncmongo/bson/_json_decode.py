"""Parsed JSON objects -> BSON values (specs/extended-json, "Parsers").

:func:`object_hook` is called bottom-up, once per JSON object, with the object's members
already converted. It applies the spec's parser rules:

- an object with a key of a type wrapper (``$oid``, ``$date``, ``$binary``, ...) must have
  exactly that wrapper's keys, with values of the right types, else
  :class:`InvalidExtendedJSON`;
- ``$ref`` + ``$id`` (+ ``$db``) shaped like a DBRef becomes a :class:`DBRef`; a near-miss
  stays a document, as the DBRef convention requires;
- any other ``$``-key (a query operator such as ``$gt``) leaves the object as a document.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Final

from asyncmongo.bson._json_options import JSONOptions
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import BSONError, InvalidExtendedJSON
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import (
    Code,
    DatetimeConversion,
    DatetimeMS,
    DBPointer,
    Int64,
    MaxKey,
    MinKey,
    Regex,
    Symbol,
    Timestamp,
    Undefined,
    UuidRepresentation,
    datetime_to_ms,
)

__all__ = ["object_hook", "parse_json_int"]

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_UINT32_MAX: Final = 2**32 - 1
_DATETIME_MIN_MS: Final = datetime_to_ms(datetime.min.replace(tzinfo=UTC))
_DATETIME_MAX_MS: Final = datetime_to_ms(datetime.max.replace(tzinfo=UTC))

_INTEGER: Final = re.compile(r"-?[0-9]+", re.ASCII)
_DOUBLE: Final = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_DOUBLE_SPECIALS: Final = {
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
    "NaN": float("nan"),
}
_HEX_SUBTYPE: Final = re.compile(r"[0-9a-fA-F]{1,2}", re.ASCII)
_OBJECT_ID: Final = re.compile(r"[0-9a-fA-F]{24}", re.ASCII)
# RFC 4122 text, optionally as a URN; the spec lets parsers accept the 32-digit form too.
_UUID: Final = re.compile(
    r"(?:urn:uuid:)?(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12}|[0-9a-fA-F]{32})",
    re.ASCII,
)
# RFC 3339 date-time (relaxed $date), fractions beyond milliseconds truncated.
_ISO_DATE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:[Zz]|([+-])(\d{2}):?(\d{2}))",
    re.ASCII,
)

# The keys that make an object a type wrapper of the conversion table (DBRef excluded).
_WRAPPER_KEYS: Final = frozenset(
    {
        "$oid", "$symbol", "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal",
        "$binary", "$uuid", "$code", "$scope", "$timestamp", "$regularExpression",
        "$dbPointer", "$date", "$minKey", "$maxKey", "$undefined",
    }
)  # fmt: skip


def parse_json_int(text: str) -> int | float:
    """A JSON integer literal: an int when it fits in int64, else a double (spec: "Special
    rules for parsing JSON numbers"; never a string)."""
    value = int(text)
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    return float(text)


def object_hook(dct: Mapping[str, Any], json_options: JSONOptions) -> Any:
    """Turn one parsed JSON object into its BSON value, or into a document.

    ``dct``'s values must already be converted (as ``json.loads`` does bottom-up with an
    ``object_pairs_hook``). Raises :class:`InvalidExtendedJSON` for a malformed type wrapper.
    """
    if len(dct) == 1:
        # Fast path: most wrappers have a single key ({"$numberInt": ...}, {"$oid": ...}).
        (key,) = dct
        entry = _SINGLE_KEY_WRAPPERS.get(key)
        if entry is not None:
            return _parse_checked(dct, entry, json_options)
    for key in dct:
        if key[:1] == "$":
            break
    else:
        return make_document(dct, json_options)
    if json_options.accept_legacy:
        legacy = _legacy(dct, json_options)
        if legacy is not _NOT_LEGACY:
            return legacy
    special = _WRAPPER_KEYS.intersection(dct)
    if special:
        return _wrapper(dct, special, json_options)
    if _is_dbref(dct):
        extra = {k: v for k, v in dct.items() if k not in ("$ref", "$id", "$db")}
        return DBRef(dct["$ref"], dct["$id"], dct.get("$db"), _extra=extra)
    return make_document(dct, json_options)


def make_document(dct: Mapping[str, Any], json_options: JSONOptions) -> Any:
    """``dct`` as an instance of the options' document_class."""
    document_class: Any = json_options.document_class
    if document_class is dict:
        return dct if type(dct) is dict else dict(dct)
    if getattr(document_class, "_type_marker", None) == 101:  # RawBSONDocument
        from asyncmongo.bson.codec import encode

        codec_options = json_options.codec_options
        return document_class(encode(dct, codec_options=codec_options), codec_options)
    document = document_class()
    document.update(dct)
    return document


def _is_dbref(dct: Mapping[str, Any]) -> bool:
    """specs/dbref: $ref a string, $id present, $db a string if present."""
    return (
        isinstance(dct.get("$ref"), str)
        and "$id" in dct
        and ("$db" not in dct or isinstance(dct["$db"], str))
    )


def _error(dct: Mapping[str, Any], why: str) -> InvalidExtendedJSON:
    shown = repr(dict(dct))
    if len(shown) > 200:
        shown = shown[:197] + "..."
    return InvalidExtendedJSON(f"invalid Extended JSON {shown}: {why}")


def _wrapper(dct: Mapping[str, Any], special: frozenset[str], options: JSONOptions) -> Any:
    """Parse a type wrapper object; every shape error becomes InvalidExtendedJSON."""
    key = "$code" if special & {"$code", "$scope"} else min(special)
    expected, parse = _WRAPPERS[key]
    keys = set(dct)
    if key == "$code" and keys == {"$code", "$scope"}:
        expected, parse = frozenset({"$code", "$scope"}), _code_with_scope
    if keys != expected:
        wanted = ", ".join(sorted(expected))
        raise _error(dct, f"a {key} wrapper must have exactly the keys {wanted}")
    return _parse_checked(dct, parse, options)


def _parse_checked(dct: Mapping[str, Any], parse: _Parser, options: JSONOptions) -> Any:
    """Run a wrapper parser, turning any error from the value constructors into ours."""
    try:
        return parse(dct, options)
    except InvalidExtendedJSON:
        raise
    except (BSONError, ValueError, TypeError, OverflowError) as exc:
        raise _error(dct, str(exc)) from exc


def _string(dct: Mapping[str, Any], key: str) -> str:
    value = dct[key]
    if not isinstance(value, str):
        raise _error(dct, f"{key} must be a string, not {type(value).__name__}")
    return value


def _object_id(dct: Mapping[str, Any], options: JSONOptions) -> ObjectId:
    text = _string(dct, "$oid")
    if not _OBJECT_ID.fullmatch(text):
        raise _error(dct, "$oid must be 24 hexadecimal digits")
    return ObjectId(text.lower())


def _symbol(dct: Mapping[str, Any], options: JSONOptions) -> Symbol:
    return Symbol(_string(dct, "$symbol"))


def _int32(dct: Mapping[str, Any], options: JSONOptions) -> int:
    text = _string(dct, "$numberInt")
    if _INTEGER.fullmatch(text):
        value = int(text)
        if _INT32_MIN <= value <= _INT32_MAX:
            return value
    raise _error(dct, "$numberInt must be a 32-bit signed integer as a string")


def _int64(dct: Mapping[str, Any], options: JSONOptions) -> Int64:
    text = _string(dct, "$numberLong")
    if _INTEGER.fullmatch(text):
        value = int(text)
        if _INT64_MIN <= value <= _INT64_MAX:
            return Int64(value)
    raise _error(dct, "$numberLong must be a 64-bit signed integer as a string")


def _double(dct: Mapping[str, Any], options: JSONOptions) -> float:
    text = _string(dct, "$numberDouble")
    if text in _DOUBLE_SPECIALS:
        return _DOUBLE_SPECIALS[text]
    if not _DOUBLE.fullmatch(text):
        raise _error(dct, "$numberDouble must be a decimal number, Infinity, -Infinity or NaN")
    return float(text)


def _decimal128(dct: Mapping[str, Any], options: JSONOptions) -> Decimal128:
    return Decimal128(_string(dct, "$numberDecimal"))


def _binary(dct: Mapping[str, Any], options: JSONOptions) -> Any:
    body = dct["$binary"]
    if not isinstance(body, Mapping) or set(body) != {"base64", "subType"}:
        raise _error(dct, '$binary must be {"base64": <string>, "subType": <hex string>}')
    return _binary_value(dct, body["base64"], body["subType"], options)


def _binary_value(dct: Mapping[str, Any], payload: Any, subtype: Any, options: JSONOptions) -> Any:
    if not isinstance(payload, str) or not isinstance(subtype, str):
        raise _error(dct, "binary base64 and subType must be strings")
    if not _HEX_SUBTYPE.fullmatch(subtype):
        raise _error(dct, "binary subType must be one or two hexadecimal digits")
    try:
        data = base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise _error(dct, f"invalid (or unpadded) base64: {exc}") from None
    return binary_to_native(data, int(subtype, 16), options)


def binary_to_native(data: bytes, subtype: int, options: JSONOptions) -> Any:
    """Binary as the codec decodes it: subtype 0 is bytes, a UUID subtype matching the
    uuid_representation is a uuid.UUID, anything else a Binary."""
    if subtype == 0:
        return data
    value = Binary(data, subtype)
    rep = options.uuid_representation
    if len(data) == 16 and rep != UuidRepresentation.UNSPECIFIED:
        if (subtype == 4) == (rep == UuidRepresentation.STANDARD) and subtype in (3, 4):
            return value.as_uuid(rep)
    return value


def _uuid(dct: Mapping[str, Any], options: JSONOptions) -> Any:
    text = _string(dct, "$uuid")
    if not _UUID.fullmatch(text):
        raise _error(dct, "$uuid must be a UUID in its RFC 4122 text form")
    return binary_to_native(uuid.UUID(text).bytes, 4, options)


def _code(dct: Mapping[str, Any], options: JSONOptions) -> Code:
    return Code(_string(dct, "$code"))


def _code_with_scope(dct: Mapping[str, Any], options: JSONOptions) -> Code:
    scope = dct["$scope"]
    if not isinstance(scope, Mapping):
        raise _error(dct, "$scope must be a document")
    return Code(_string(dct, "$code"), scope)


def _timestamp(dct: Mapping[str, Any], options: JSONOptions) -> Timestamp:
    body = dct["$timestamp"]
    if not isinstance(body, Mapping) or set(body) != {"t", "i"}:
        raise _error(dct, '$timestamp must be {"t": <integer>, "i": <integer>}')
    time, inc = body["t"], body["i"]
    for value in (time, inc):
        if type(value) not in (int, Int64) or not 0 <= value <= _UINT32_MAX:
            raise _error(dct, "$timestamp t and i must be unsigned 32-bit integers")
    return Timestamp(int(time), int(inc))


def _regular_expression(dct: Mapping[str, Any], options: JSONOptions) -> Regex:
    body = dct["$regularExpression"]
    if not isinstance(body, Mapping) or set(body) != {"pattern", "options"}:
        raise _error(dct, '$regularExpression must be {"pattern": ..., "options": ...}')
    pattern, flags = body["pattern"], body["options"]
    if not isinstance(pattern, str) or not isinstance(flags, str):
        raise _error(dct, "$regularExpression pattern and options must be strings")
    return Regex(pattern, flags)


def _dbpointer(dct: Mapping[str, Any], options: JSONOptions) -> DBPointer:
    body = dct["$dbPointer"]
    # The inner {"$ref", "$id"} object was already read as a DBRef (it has that shape).
    if (
        not isinstance(body, DBRef)
        or body.database is not None
        or body.extra
        or not isinstance(body.id, ObjectId)
    ):
        raise _error(dct, '$dbPointer must be {"$ref": <string>, "$id": <ObjectId>}')
    return DBPointer(body.collection, body.id)


def _date(dct: Mapping[str, Any], options: JSONOptions) -> Any:
    value = dct["$date"]
    if isinstance(value, str):
        ms = _iso_to_ms(dct, value)
    elif type(value) is Int64:  # {"$numberLong": ...}, already converted
        ms = int(value)
    elif options.accept_legacy and type(value) is int:  # legacy {"$date": <ms>}
        ms = value
    else:
        raise _error(dct, '$date must be an ISO-8601 string or {"$numberLong": <string>}')
    return datetime_to_native(ms, options)


def _iso_to_ms(dct: Mapping[str, Any], text: str) -> int:
    match = _ISO_DATE.fullmatch(text)
    if match is None:
        raise _error(dct, "$date string must be an RFC 3339 date-time")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, sign, offset_hours, offset_minutes = match.groups()[6:]
    offset = timedelta(0)
    if sign is not None:
        offset = timedelta(hours=int(offset_hours), minutes=int(offset_minutes))
        offset = -offset if sign == "-" else offset
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
    except ValueError as exc:
        raise _error(dct, str(exc)) from None
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    return datetime_to_ms(moment) + millis


def datetime_to_native(ms: int, options: JSONOptions) -> Any:
    """A BSON datetime as the codec decodes it, per datetime_conversion."""
    value = DatetimeMS(ms)
    conversion = options.datetime_conversion
    if conversion == DatetimeConversion.DATETIME_MS:
        return value
    if conversion == DatetimeConversion.DATETIME_AUTO and not (
        _DATETIME_MIN_MS <= ms <= _DATETIME_MAX_MS
    ):
        return value
    try:
        return value.to_datetime(options.codec_options)
    except (OverflowError, ValueError) as exc:
        raise InvalidExtendedJSON(
            f"$date {ms} ms is outside the range of datetime (use "
            f"DatetimeConversion.DATETIME_AUTO or DATETIME_MS): {exc}"
        ) from None


def _one(value: Any) -> bool:
    return type(value) is int and value == 1


def _min_key(dct: Mapping[str, Any], options: JSONOptions) -> Any:
    if not _one(dct["$minKey"]):
        raise _error(dct, "$minKey must be 1")
    return MinKey()


def _max_key(dct: Mapping[str, Any], options: JSONOptions) -> Any:
    if not _one(dct["$maxKey"]):
        raise _error(dct, "$maxKey must be 1")
    return MaxKey()


def _undefined(dct: Mapping[str, Any], options: JSONOptions) -> Any:
    if dct["$undefined"] is not True:
        raise _error(dct, "$undefined must be true")
    return Undefined()


_Parser = Callable[[Mapping[str, Any], JSONOptions], Any]


def _keys(*keys: str) -> frozenset[str]:
    return frozenset(keys)


_WRAPPERS: Final[dict[str, tuple[frozenset[str], _Parser]]] = {
    "$oid": (_keys("$oid"), _object_id),
    "$symbol": (_keys("$symbol"), _symbol),
    "$numberInt": (_keys("$numberInt"), _int32),
    "$numberLong": (_keys("$numberLong"), _int64),
    "$numberDouble": (_keys("$numberDouble"), _double),
    "$numberDecimal": (_keys("$numberDecimal"), _decimal128),
    "$binary": (_keys("$binary"), _binary),
    "$uuid": (_keys("$uuid"), _uuid),
    "$code": (_keys("$code"), _code),
    "$timestamp": (_keys("$timestamp"), _timestamp),
    "$regularExpression": (_keys("$regularExpression"), _regular_expression),
    "$dbPointer": (_keys("$dbPointer"), _dbpointer),
    "$date": (_keys("$date"), _date),
    "$minKey": (_keys("$minKey"), _min_key),
    "$maxKey": (_keys("$maxKey"), _max_key),
    "$undefined": (_keys("$undefined"), _undefined),
}

_SINGLE_KEY_WRAPPERS: Final[dict[str, _Parser]] = {
    key: parse for key, (expected, parse) in _WRAPPERS.items() if expected == {key}
}


class _NotLegacy:
    """Marker: the object is not one of the legacy forms."""


_NOT_LEGACY: Final = _NotLegacy()


def _legacy(dct: Mapping[str, Any], options: JSONOptions) -> Any:
    """The Legacy Extended JSON forms (only with accept_legacy).

    ``{"$regex": <string>, "$options"?: <string>}`` is a regex; with a non-string ``$regex``
    (the query operator holding a BSON regex) it stays a document. ``{"$binary": <string>,
    "$type": <hex>}`` is binary; a lone ``$type`` (the query operator) stays a document.
    """
    keys = set(dct)
    if "$regex" in keys and isinstance(dct["$regex"], str) and keys <= {"$regex", "$options"}:
        flags = dct.get("$options", "")
        if not isinstance(flags, str):
            raise _error(dct, "$options must be a string")
        return Regex(dct["$regex"], flags)
    if keys == {"$binary", "$type"} and isinstance(dct["$binary"], str):
        return _binary_value(dct, dct["$binary"], dct["$type"], options)
    return _NOT_LEGACY
