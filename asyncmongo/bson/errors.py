"""Exceptions raised by the BSON codec.

Every failure to decode bytes is an :class:`InvalidBSON`; every failure to encode a Python
value is an :class:`InvalidDocument`. Callers never see IndexError, struct.error,
UnicodeDecodeError or RecursionError from the codec.
"""

from __future__ import annotations


class BSONError(Exception):
    """Base class of every BSON error."""

    #: Set by a collection bulk write that failed encoding a later batch: the partial
    #: BulkWriteResult of the batches already acknowledged (see asyncmongo.errors.MongoError).
    partial_result: object = None


class InvalidBSON(BSONError):
    """The bytes are not valid BSON (bad length, truncated, unknown type, bad UTF-8, ...)."""


class InvalidDocument(BSONError):
    """A Python value cannot be encoded as BSON (bad key, unsupported type, too deep, ...)."""


class InvalidStringData(InvalidDocument):
    """A string to encode is not valid UTF-8 or contains a forbidden NUL byte."""


class InvalidId(BSONError):
    """A value cannot be turned into an ObjectId."""


class InvalidDecimal128(BSONError, ValueError):
    """A value cannot be turned into a Decimal128: bad syntax, overflow, underflow or a
    rounding that would lose digits (the Decimal128 spec rejects inexact values)."""


class InvalidBinary(BSONError, ValueError):
    """A Binary cannot be converted to or from the requested UUID or vector form."""


class InvalidExtendedJSON(BSONError, ValueError):
    """Extended JSON text is valid JSON but a ``$``-type wrapper in it is malformed (missing or
    extra keys, a value of the wrong type or out of range), so it names no BSON value.

    Malformed JSON itself raises :class:`json.JSONDecodeError` (also a ValueError)."""
