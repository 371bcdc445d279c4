"""BSON bytes to Python values: the decoder behind :func:`asyncmongo.bson.decode`.

Speed: the element loops inline the common types (most frequent first) and dispatch the rest
through a table; nested documents and arrays recurse directly (one call per level); types are
built without re-validating what the bytes already guarantee.

Safety: every length is checked before it is trusted. A length that points outside the
enclosing document is caught either by Python's bounds (IndexError, struct.error, turned into
InvalidBSON by the caller) or by the rule that each document's elements end exactly at its
terminating NUL. Keys must end before the document does, strings must be NUL-terminated and
valid UTF-8 (per the unicode_decode_error_handler), booleans are 0 or 1, and nesting is
bounded by MAX_NESTING_DEPTH.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from asyncmongo.bson.binary import OLD_BINARY_SUBTYPE, OLD_UUID_SUBTYPE, UUID_SUBTYPE, Binary
from asyncmongo.bson.codec_options import (
    CodecOptions,
    ValueClasses,
    as_codec_options,
    is_raw_document_class,
)
from asyncmongo.bson.dbref import DBRef
from asyncmongo.bson.decimal128 import Decimal128
from asyncmongo.bson.errors import InvalidBSON
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
)

__all__ = ["MAX_NESTING_DEPTH", "apply_decoder", "decode_document_at", "inflate_raw"]

MAX_NESTING_DEPTH: Final = 400
"""Documents and arrays nested deeper than this are refused (InvalidBSON / InvalidDocument).
The server refuses user documents deeper than 100 levels (200 for commands); the bound keeps
hostile input from exhausting the Python stack."""

_UNPACK_I32: Final = struct.Struct("<i").unpack_from
_UNPACK_I64: Final = struct.Struct("<q").unpack_from
_UNPACK_F64: Final = struct.Struct("<d").unpack_from
_UNPACK_U32_PAIR: Final = struct.Struct("<II").unpack_from
_UNPACK_U64_PAIR: Final = struct.Struct("<QQ").unpack

_EPOCH_NAIVE: Final = datetime(1970, 1, 1)
_EPOCH_AWARE: Final = datetime(1970, 1, 1, tzinfo=UTC)
_DATETIME: Final = DatetimeConversion.DATETIME
_MIN_KEY: Final = MinKey()
_MAX_KEY: Final = MaxKey()
_UNDEFINED: Final = Undefined()

_UTF8_STRICT: Final[Callable[[bytes], str]] = bytes.decode  # UTF-8, strict: the defaults
_new_object = object.__new__
_set_attribute = object.__setattr__
_new_str = str.__new__
_new_bytes = bytes.__new__
_new_int = int.__new__


def _utf8_decoder(errors: str) -> Callable[[bytes], str]:
    """A UTF-8 decoder with a non-default error handler (CodecOptions'
    unicode_decode_error_handler)."""
    return functools.partial(bytes.decode, encoding="utf-8", errors=errors)


def _bad(message: str) -> InvalidBSON:
    return InvalidBSON(message)


class _UserCodeError(Exception):
    """Carries what a custom type decoder raised past the translation of errors into
    InvalidBSON (PyMongo lets those errors through unchanged)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


def apply_decoder(decoder: Callable[[Any], Any], value: Any) -> Any:
    """``decoder(value)`` (a TypeDecoder's transform_bson), its errors wrapped to pass."""
    try:
        return decoder(value)
    except Exception as exc:
        raise _UserCodeError(exc) from None


def _apply_decoders(values: Any, items: Any, decoders: dict[Any, Callable[[Any], Any]]) -> None:
    """Per element, the custom decoder of its exact type (specs of PyMongo's TypeRegistry)."""
    for key, value in items:
        decoder = decoders.get(type(value))
        if decoder is not None:
            values[key] = apply_decoder(decoder, value)


# -- building values without re-validation ---------------------------------------------------


def _new_oid(raw: bytes, opts: CodecOptions) -> Any:
    vc = opts.value_classes
    if vc is not None:
        return _new_foreign_oid(raw, vc)
    oid: ObjectId = _new_object(ObjectId)
    oid._binary = raw
    return oid


def _new_foreign_oid(raw: bytes, vc: ValueClasses) -> Any:
    oid: Any = _new_object(vc.object_id)
    _set_attribute(oid, vc.object_id_slot, raw)
    return oid


def _new_foreign_code(code: str, scope: Any, vc: ValueClasses) -> Any:
    slot = vc.code_slot
    if slot is None:
        return vc.code(code, scope)
    code_class: Any = vc.code
    value = _new_str(code_class, code)
    _set_attribute(value, slot, scope)
    return value


def _new_foreign_decimal128(bid: bytes, vc: ValueClasses) -> Any:
    slots = vc.decimal128_slots
    if slots is None:
        return vc.decimal128(bid)
    low, high = _UNPACK_U64_PAIR(bid)
    cls: Any = vc.decimal128
    value = _new_object(cls)
    _set_attribute(value, slots[0], high)
    _set_attribute(value, slots[1], low)
    return value


def _new_code(code: str, scope: Any) -> Code:
    value: Code = _new_str(Code, code)
    value.scope = scope
    return value


# -- readers for the rarer types: (data, pos, end, opts, depth) -> (value, new pos) --


def _read_string(data: bytes, pos: int, errors: str) -> tuple[str, int]:
    """A BSON string (int32 length incl. NUL, UTF-8, NUL) at ``pos``."""
    n = _UNPACK_I32(data, pos)[0]
    pos += 4
    if n < 1 or data[pos + n - 1]:
        raise _bad("invalid string length or missing NUL terminator")
    return data[pos : pos + n - 1].decode("utf-8", errors), pos + n


def _binary(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    n = _UNPACK_I32(data, pos)[0]
    if n < 0:
        raise _bad("negative binary length")
    subtype = data[pos + 4]
    pos += 5
    stop = pos + n
    if stop > end:
        raise _bad("binary data runs past the end of the document")
    if subtype == 0:
        return data[pos:stop], stop
    vc = opts.value_classes
    if subtype == OLD_BINARY_SUBTYPE:
        if n < 4 or _UNPACK_I32(data, pos)[0] != n - 4:
            raise _bad("binary subtype 2: inner length does not match the outer length")
        if vc is not None:
            return vc.binary(data[pos + 4 : stop], OLD_BINARY_SUBTYPE), stop
        return Binary(data[pos + 4 : stop], OLD_BINARY_SUBTYPE), stop
    value: Binary = _new_bytes(Binary, data[pos:stop])
    value._subtype = subtype
    rep = opts.uuid_representation
    if (n == 16 or vc is not None) and rep != UuidRepresentation.UNSPECIFIED:
        # specs/bson-binary-uuid implicit decoding: only the matching subtype becomes a UUID.
        standard = rep == UuidRepresentation.STANDARD
        if (subtype == UUID_SUBTYPE) if standard else (subtype == OLD_UUID_SUBTYPE):
            if n != 16:  # PyMongo's verdict (value_classes decode as PyMongo does)
                raise _bad(f"cannot decode a uuid from a {n}-byte payload, expected 16")
            return value.as_uuid(rep), stop
    if vc is not None:
        return vc.binary(data[pos:stop], subtype), stop
    return value, stop


def _decimal128(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    if pos + 16 > end:
        raise _bad("truncated decimal128")
    vc = opts.value_classes
    if vc is not None:
        return _new_foreign_decimal128(data[pos : pos + 16], vc), pos + 16
    return Decimal128.from_bid(data[pos : pos + 16]), pos + 16


def _timestamp(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    inc, time = _UNPACK_U32_PAIR(data, pos)
    vc = opts.value_classes
    if vc is not None:
        slots = vc.timestamp_slots
        if slots is None:
            return vc.timestamp(time, inc), pos + 8
        cls: Any = vc.timestamp
        foreign = _new_object(cls)
        _set_attribute(foreign, slots[0], time)
        _set_attribute(foreign, slots[1], inc)
        return foreign, pos + 8
    timestamp: Timestamp = _new_object(Timestamp)
    _set_attribute(timestamp, "time", time)
    _set_attribute(timestamp, "inc", inc)
    return timestamp, pos + 8


def _regex(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    errors = opts.unicode_decode_error_handler
    nul = data.index(0, pos, end)
    flags_end = data.index(0, nul + 1, end)
    vc = opts.value_classes
    if vc is not None:
        pattern = data[pos:nul].decode("utf-8", errors)
        return vc.regex(pattern, data[nul + 1 : flags_end].decode("utf-8", errors)), flags_end + 1
    regex: Regex = _new_object(Regex)
    _set_attribute(regex, "pattern", data[pos:nul].decode("utf-8", errors))
    _set_attribute(regex, "flags", data[nul + 1 : flags_end].decode("utf-8", errors))
    return regex, flags_end + 1


def _code(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    code, pos = _read_string(data, pos, opts.unicode_decode_error_handler)
    vc = opts.value_classes
    if vc is not None:
        return _new_foreign_code(code, None, vc), pos
    return _new_code(code, None), pos


def _symbol(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    symbol, pos = _read_string(data, pos, opts.unicode_decode_error_handler)
    vc = opts.value_classes
    if vc is not None:
        return vc.symbol(symbol), pos
    return Symbol(symbol), pos


def _code_with_scope(
    data: bytes, pos: int, end: int, opts: CodecOptions, depth: int
) -> tuple[Any, int]:
    total = _UNPACK_I32(data, pos)[0]
    stop = pos + total
    if total < 14 or stop > end:
        raise _bad("invalid code-with-scope length")
    n = _UNPACK_I32(data, pos + 4)[0]
    scope_pos = pos + 8 + n
    if n < 1 or scope_pos + 5 > stop or data[scope_pos - 1]:
        raise _bad("invalid code-with-scope string length or terminator")
    code = data[pos + 8 : scope_pos - 1].decode("utf-8", opts.unicode_decode_error_handler)
    scope_len = _UNPACK_I32(data, scope_pos)[0]
    if scope_len < 5 or scope_pos + scope_len != stop or data[stop - 1]:
        raise _bad("code-with-scope lengths do not match")
    scope = _decode_document(data, scope_pos + 4, stop - 1, opts, depth + 1)
    vc = opts.value_classes
    if vc is not None:
        doc_class = opts.document_class
        if doc_class is not dict and not is_raw_document_class(doc_class):
            scope = _to_document_class(scope, doc_class)
        slot = vc.code_slot
        if slot is None:
            return vc.code(code, scope), stop
        code_class: Any = vc.code
        foreign = _new_str(code_class, code)
        _set_attribute(foreign, slot, scope)
        return foreign, stop
    value: Code = _new_str(Code, code)
    value.scope = scope
    return value, stop


def _dbpointer(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    namespace, pos = _read_string(data, pos, opts.unicode_decode_error_handler)
    if pos + 12 > end:
        raise _bad("truncated DBPointer ObjectId")
    vc = opts.value_classes
    if vc is not None:
        return vc.dbpointer(namespace, _new_foreign_oid(data[pos : pos + 12], vc)), pos + 12
    return DBPointer(namespace, _new_oid(data[pos : pos + 12], opts)), pos + 12


def _undefined(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    vc = opts.value_classes
    return (_UNDEFINED if vc is None else vc.undefined), pos


def _min_key(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    vc = opts.value_classes
    return (_MIN_KEY if vc is None else vc.min_key), pos


def _max_key(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> tuple[Any, int]:
    vc = opts.value_classes
    return (_MAX_KEY if vc is None else vc.max_key), pos


_Reader = Callable[[bytes, int, int, CodecOptions, int], tuple[Any, int]]

_RARE: Final[dict[int, _Reader]] = {
    0x05: _binary,
    0x06: _undefined,
    0x0B: _regex,
    0x0C: _dbpointer,
    0x0D: _code,
    0x0E: _symbol,
    0x0F: _code_with_scope,
    0x11: _timestamp,
    0x13: _decimal128,
    0x7F: _max_key,
    0xFF: _min_key,
}


# -- datetimes, DBRefs, document classes --


def _datetime_from_ms(ms: int, opts: CodecOptions) -> Any:
    """A BSON datetime per the codec options' datetime_conversion, tz_aware and tzinfo."""
    conversion = opts.datetime_conversion
    if conversion == DatetimeConversion.DATETIME_MS:
        return _datetime_ms(ms, opts)
    seconds, millis = divmod(ms, 1000)
    try:
        aware = _EPOCH_AWARE + timedelta(0, seconds, millis * 1000)
    except OverflowError:
        if conversion == DatetimeConversion.DATETIME_AUTO:
            return _datetime_ms(ms, opts)
        if conversion == DatetimeConversion.DATETIME_CLAMP:
            return DatetimeMS(ms).to_datetime(opts)
        raise _bad(
            f"datetime {ms} ms since the epoch is outside Python's datetime range; decode "
            "with CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO) "
            "(or DATETIME_MS / DATETIME_CLAMP)"
        ) from None
    if not opts.tz_aware:
        return aware.replace(tzinfo=None)
    if opts.tzinfo is not None:
        try:
            return aware.astimezone(opts.tzinfo)
        except OverflowError:
            if conversion == DatetimeConversion.DATETIME_AUTO:
                return _datetime_ms(ms, opts)
            raise _bad(f"datetime {ms} ms does not fit in {opts.tzinfo!r}") from None
    return aware


def _datetime_ms(ms: int, opts: CodecOptions) -> Any:
    vc = opts.value_classes
    return DatetimeMS(ms) if vc is None else vc.datetime_ms(ms)


def _dbref_or_document(doc: dict[str, Any], opts: CodecOptions) -> Any:
    """specs/dbref: $ref (a str) and $id present, $db a str if present, make a DBRef;
    any other shape stays a plain document. With value_classes, PyMongo's rule: $db may
    also be null."""
    ref = doc["$ref"]
    if not isinstance(ref, str) or "$id" not in doc:
        return doc
    vc = opts.value_classes
    db = doc.get("$db")
    if "$db" in doc and not isinstance(db, str) and (vc is None or db is not None):
        return doc
    extra = {k: v for k, v in doc.items() if k not in ("$ref", "$id", "$db")}
    if vc is not None:
        return vc.dbref(ref, doc["$id"], db, extra)
    return DBRef(ref, doc["$id"], db, extra)


def _raw_document(doc_class: Any, raw: bytes, opts: CodecOptions) -> Any:
    """A RawBSONDocument-like document_class over ``raw``; a foreign one (PyMongo's) is
    given the options object it understands (``ValueClasses.raw_codec_options``)."""
    vc = opts.value_classes
    if vc is not None and vc.raw_codec_options is not None:
        # asyncmongo's RawBSONDocument (raw.py, which imports this module) and subclasses.
        if not any(base.__module__ == "asyncmongo.bson.raw" for base in doc_class.__mro__):
            return doc_class(raw, vc.raw_codec_options(opts))
    return doc_class(raw, opts)


def _to_document_class(doc: dict[str, Any], doc_class: type[Any]) -> Any:
    out = doc_class()
    for key, value in doc.items():
        out[key] = value
    return out


def _embedded_other(data: bytes, pos: int, stop: int, opts: CodecOptions, depth: int) -> Any:
    """An embedded document (``data[pos:stop + 1]``) when document_class is not dict."""
    doc_class = opts.document_class
    if is_raw_document_class(doc_class):
        return _raw_document(doc_class, data[pos : stop + 1], opts)
    doc = _decode_document(data, pos + 4, stop, opts, depth)
    if "$ref" in doc:
        ref = _dbref_or_document(doc, opts)
        if ref is not doc:
            return ref
    return _to_document_class(doc, doc_class)


# -- the element loops --
# _decode_document and _decode_array are the same loop, one storing by key, the other
# appending (array keys are skipped, not decoded). They are kept apart for speed.


def _decode_document(
    data: bytes, pos: int, end: int, opts: CodecOptions, depth: int
) -> dict[str, Any]:
    """The elements in ``data[pos:end]`` (``end`` is the document's NUL) as a dict."""
    if depth > MAX_NESTING_DEPTH:
        raise _bad(f"document nested deeper than {MAX_NESTING_DEPTH} levels")
    errors = opts.unicode_decode_error_handler
    utf8 = _UTF8_STRICT if errors == "strict" else _utf8_decoder(errors)
    unpack_i32 = _UNPACK_I32
    index = data.index
    vc = opts.value_classes
    doc: dict[str, Any] = {}
    while pos < end:
        t = data[pos]
        kend = index(0, pos + 1, end)
        key = utf8(data[pos + 1 : kend])
        pos = kend + 1
        if t == 0x02:
            n = unpack_i32(data, pos)[0]
            pos += 4
            if n < 1 or data[pos + n - 1]:
                raise _bad(f"invalid string length or terminator for key {key!r}")
            doc[key] = utf8(data[pos : pos + n - 1])
            pos += n
        elif t == 0x10:
            doc[key] = unpack_i32(data, pos)[0]
            pos += 4
        elif t == 0x01:
            doc[key] = _UNPACK_F64(data, pos)[0]
            pos += 8
        elif t == 0x08:
            b = data[pos]
            if b > 1:
                raise _bad(f"invalid boolean value {b} for key {key!r}")
            doc[key] = b == 1
            pos += 1
        elif t == 0x12:
            n64 = _UNPACK_I64(data, pos)[0]
            doc[key] = Int64(n64) if vc is None else _new_int(vc.int64, n64)
            pos += 8
        elif t == 0x03:
            n = unpack_i32(data, pos)[0]
            stop = pos + n - 1
            if n < 5 or data[stop]:
                raise _bad(f"invalid length or terminator for document {key!r}")
            if opts.document_class is dict:
                sub = _decode_document(data, pos + 4, stop, opts, depth + 1)
                doc[key] = _dbref_or_document(sub, opts) if "$ref" in sub else sub
            else:
                doc[key] = _embedded_other(data, pos, stop, opts, depth + 1)
            pos = stop + 1
        elif t == 0x04:
            n = unpack_i32(data, pos)[0]
            stop = pos + n - 1
            if n < 5 or data[stop]:
                raise _bad(f"invalid length or terminator for array {key!r}")
            doc[key] = _decode_array(data, pos + 4, stop, opts, depth + 1)
            pos = stop + 1
        elif t == 0x09:
            ms = _UNPACK_I64(data, pos)[0]
            pos += 8
            if opts.datetime_conversion is _DATETIME and not opts.tz_aware:
                seconds, millis = divmod(ms, 1000)
                try:
                    doc[key] = _EPOCH_NAIVE + timedelta(0, seconds, millis * 1000)
                    continue
                except OverflowError:
                    pass
            doc[key] = _datetime_from_ms(ms, opts)
        elif t == 0x07:
            if vc is None:
                oid = _new_object(ObjectId)
                oid._binary = data[pos : pos + 12]
                doc[key] = oid
            else:
                doc[key] = _new_foreign_oid(data[pos : pos + 12], vc)
            pos += 12
        elif t == 0x0A:
            doc[key] = None
        elif t == 0x05 and data[pos + 4] == 0:
            n = unpack_i32(data, pos)[0]
            pos += 5
            if n < 0 or pos + n > end:
                raise _bad(f"invalid binary length for key {key!r}")
            doc[key] = data[pos : pos + n]
            pos += n
        else:
            reader = _RARE.get(t)
            if reader is None:
                raise _bad(f"unknown BSON type 0x{t:02x} for key {key!r}")
            doc[key], pos = reader(data, pos, end, opts, depth)
    if pos != end:
        raise _bad("document elements do not end where the document length says")
    decoders = opts._decoders
    if decoders is not None:
        _apply_decoders(doc, list(doc.items()), decoders)
    return doc


def _decode_array(data: bytes, pos: int, end: int, opts: CodecOptions, depth: int) -> list[Any]:
    """The elements in ``data[pos:end]`` (``end`` is the array's NUL) as a list."""
    if depth > MAX_NESTING_DEPTH:
        raise _bad(f"document nested deeper than {MAX_NESTING_DEPTH} levels")
    errors = opts.unicode_decode_error_handler
    utf8 = _UTF8_STRICT if errors == "strict" else _utf8_decoder(errors)
    unpack_i32 = _UNPACK_I32
    index = data.index
    vc = opts.value_classes
    out: list[Any] = []
    append = out.append
    while pos < end:
        t = data[pos]
        pos = index(0, pos + 1, end) + 1
        if t == 0x02:
            n = unpack_i32(data, pos)[0]
            pos += 4
            if n < 1 or data[pos + n - 1]:
                raise _bad("invalid string length or terminator in array")
            append(utf8(data[pos : pos + n - 1]))
            pos += n
        elif t == 0x10:
            append(unpack_i32(data, pos)[0])
            pos += 4
        elif t == 0x01:
            append(_UNPACK_F64(data, pos)[0])
            pos += 8
        elif t == 0x08:
            b = data[pos]
            if b > 1:
                raise _bad(f"invalid boolean value {b} in array")
            append(b == 1)
            pos += 1
        elif t == 0x12:
            n64 = _UNPACK_I64(data, pos)[0]
            append(Int64(n64) if vc is None else _new_int(vc.int64, n64))
            pos += 8
        elif t == 0x03:
            n = unpack_i32(data, pos)[0]
            stop = pos + n - 1
            if n < 5 or data[stop]:
                raise _bad("invalid length or terminator for a document in an array")
            if opts.document_class is dict:
                sub = _decode_document(data, pos + 4, stop, opts, depth + 1)
                append(_dbref_or_document(sub, opts) if "$ref" in sub else sub)
            else:
                append(_embedded_other(data, pos, stop, opts, depth + 1))
            pos = stop + 1
        elif t == 0x04:
            n = unpack_i32(data, pos)[0]
            stop = pos + n - 1
            if n < 5 or data[stop]:
                raise _bad("invalid length or terminator for an array in an array")
            append(_decode_array(data, pos + 4, stop, opts, depth + 1))
            pos = stop + 1
        elif t == 0x09:
            ms = _UNPACK_I64(data, pos)[0]
            pos += 8
            if opts.datetime_conversion is _DATETIME and not opts.tz_aware:
                seconds, millis = divmod(ms, 1000)
                try:
                    append(_EPOCH_NAIVE + timedelta(0, seconds, millis * 1000))
                    continue
                except OverflowError:
                    pass
            append(_datetime_from_ms(ms, opts))
        elif t == 0x07:
            if vc is None:
                oid = _new_object(ObjectId)
                oid._binary = data[pos : pos + 12]
                append(oid)
            else:
                append(_new_foreign_oid(data[pos : pos + 12], vc))
            pos += 12
        elif t == 0x0A:
            append(None)
        elif t == 0x05 and data[pos + 4] == 0:
            n = unpack_i32(data, pos)[0]
            pos += 5
            if n < 0 or pos + n > end:
                raise _bad("invalid binary length in array")
            append(data[pos : pos + n])
            pos += n
        else:
            reader = _RARE.get(t)
            if reader is None:
                raise _bad(f"unknown BSON type 0x{t:02x} in array")
            value, pos = reader(data, pos, end, opts, depth)
            append(value)
    if pos != end:
        raise _bad("array elements do not end where the array length says")
    decoders = opts._decoders
    if decoders is not None:
        _apply_decoders(out, enumerate(list(out)), decoders)
    return out


# -- entry points --


def decode_document_at(data: bytes, pos: int, opts: CodecOptions) -> tuple[Any, int]:
    """The top-level document starting at ``pos``; returns (document, position after it).

    Raises only InvalidBSON for bad bytes. PyMongo's CodecOptions are converted.
    """
    if type(opts) is not CodecOptions:
        opts = as_codec_options(opts)
    try:
        if len(data) - pos < 5:
            raise _bad(f"not enough bytes for a BSON document ({len(data) - pos})")
        size = _UNPACK_I32(data, pos)[0]
        stop = pos + size
        if size < 5 or stop > len(data):
            raise _bad(f"BSON document length {size} does not match the data")
        if data[stop - 1]:
            raise _bad("BSON document is not terminated by a NUL byte")
        doc_class = opts.document_class
        if doc_class is dict:
            return _decode_document(data, pos + 4, stop - 1, opts, 0), stop
        if is_raw_document_class(doc_class):
            return _raw_document(doc_class, data[pos:stop], opts), stop
        doc = _decode_document(data, pos + 4, stop - 1, opts, 0)
        return _to_document_class(doc, doc_class), stop
    except InvalidBSON:
        raise
    except _UserCodeError as exc:
        raise exc.error from None
    except (struct.error, ValueError, IndexError, OverflowError) as exc:
        # ValueError covers UnicodeDecodeError and bytes.index not finding a NUL.
        raise InvalidBSON(f"invalid BSON: {exc}") from None
    except RecursionError:
        raise InvalidBSON("BSON nested too deeply for the Python stack") from None


def inflate_raw(raw: bytes, opts: CodecOptions) -> dict[str, Any]:
    """The fields of a RawBSONDocument (its embedded documents stay raw)."""
    try:
        return _decode_document(raw, 4, len(raw) - 1, opts, 0)
    except InvalidBSON:
        raise
    except _UserCodeError as exc:
        raise exc.error from None
    except (struct.error, ValueError, IndexError, OverflowError) as exc:
        raise InvalidBSON(f"invalid BSON: {exc}") from None
    except RecursionError:
        raise InvalidBSON("BSON nested too deeply for the Python stack") from None
