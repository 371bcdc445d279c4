"""BSON binary data (type 0x05) with its subtype, UUID helpers and the vector subtype.

Plain :class:`bytes` is binary subtype 0; :class:`Binary` carries any subtype 0..255.
UUIDs follow specs/bson-binary-uuid (explicit conversion with a representation); vectors
(subtype 9) follow specs/bson-binary-vector.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Final

from asyncmongo.bson.codec_options import UuidRepresentation
from asyncmongo.bson.errors import InvalidBinary, InvalidDocument

__all__ = [
    "BINARY_SUBTYPE",
    "FUNCTION_SUBTYPE",
    "MD5_SUBTYPE",
    "OLD_BINARY_SUBTYPE",
    "OLD_UUID_SUBTYPE",
    "USER_DEFINED_SUBTYPE",
    "UUID_SUBTYPE",
    "VECTOR_SUBTYPE",
    "Binary",
    "BinaryVector",
    "BinaryVectorDtype",
]

BINARY_SUBTYPE: Final = 0
FUNCTION_SUBTYPE: Final = 1
OLD_BINARY_SUBTYPE: Final = 2
OLD_UUID_SUBTYPE: Final = 3
UUID_SUBTYPE: Final = 4
MD5_SUBTYPE: Final = 5
ENCRYPTED_SUBTYPE: Final = 6
COLUMN_SUBTYPE: Final = 7
SENSITIVE_SUBTYPE: Final = 8
VECTOR_SUBTYPE: Final = 9
USER_DEFINED_SUBTYPE: Final = 0x80


class BinaryVectorDtype(IntEnum):
    """The element type of a vector (specs/bson-binary-vector: the dtype byte)."""

    INT8 = 0x03
    FLOAT32 = 0x27
    PACKED_BIT = 0x10


@dataclass(frozen=True, slots=True)
class BinaryVector:
    """A vector decoded from (or to be encoded as) binary subtype 9.

    ``data`` holds ints for INT8 (-128..127) and PACKED_BIT (bytes 0..255, 8 bits each), floats
    for FLOAT32; ``padding`` is the number of ignored low bits of the last PACKED_BIT byte.
    Equality is by dtype, padding and data (as the spec's prose test 3 describes).
    """

    data: list[int] | list[float]
    dtype: BinaryVectorDtype
    padding: int = field(default=0)


_FLOAT32: Final = struct.Struct("<f")


class Binary(bytes):
    """Binary data with a BSON subtype (0..255). Equal only to a Binary of the same subtype and
    bytes, never to plain :class:`bytes` (which is subtype 0 on the wire)."""

    # bytes is variable-sized, so no __slots__: the subtype lives in the instance __dict__.
    _subtype: int

    def __new__(cls, data: bytes | bytearray | memoryview, subtype: int = BINARY_SUBTYPE) -> Binary:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"data must be bytes-like, not {type(data).__name__}")
        if not isinstance(subtype, int) or isinstance(subtype, bool):
            raise TypeError(f"subtype must be an int, not {type(subtype).__name__}")
        if not 0 <= subtype <= 255:
            raise InvalidDocument(f"binary subtype must be in 0..255, not {subtype}")
        self = bytes.__new__(cls, data)
        self._subtype = subtype
        return self

    @property
    def subtype(self) -> int:
        """The BSON binary subtype (0..255)."""
        return self._subtype

    # -- UUID (specs/bson-binary-uuid) -------------------------------------------------------

    @classmethod
    def from_uuid(
        cls,
        value: uuid.UUID,
        uuid_representation: UuidRepresentation = UuidRepresentation.STANDARD,
    ) -> Binary:
        """Encode a UUID: STANDARD gives subtype 4, the legacy representations subtype 3 in
        their byte orders; UNSPECIFIED is refused (the application must choose)."""
        if not isinstance(value, uuid.UUID):
            raise TypeError(f"value must be a uuid.UUID, not {type(value).__name__}")
        raw = value.bytes
        rep = uuid_representation
        if rep == UuidRepresentation.STANDARD:
            return cls(raw, UUID_SUBTYPE)
        if rep == UuidRepresentation.PYTHON_LEGACY:
            return cls(raw, OLD_UUID_SUBTYPE)
        if rep == UuidRepresentation.JAVA_LEGACY:
            return cls(_java_swap(raw), OLD_UUID_SUBTYPE)
        if rep == UuidRepresentation.CSHARP_LEGACY:
            return cls(value.bytes_le, OLD_UUID_SUBTYPE)
        raise InvalidBinary(
            "cannot encode a native uuid.UUID with UuidRepresentation.UNSPECIFIED: choose a "
            "representation (STANDARD for new applications), or use Binary.from_uuid(...)"
        )

    def as_uuid(
        self, uuid_representation: UuidRepresentation = UuidRepresentation.STANDARD
    ) -> uuid.UUID:
        """Decode to a UUID; the subtype must match the representation (4 for STANDARD, 3 for
        the legacy ones), else :class:`InvalidBinary`."""
        rep = uuid_representation
        if rep == UuidRepresentation.UNSPECIFIED:
            raise InvalidBinary("cannot decode a UUID with UuidRepresentation.UNSPECIFIED")
        expected = UUID_SUBTYPE if rep == UuidRepresentation.STANDARD else OLD_UUID_SUBTYPE
        if self._subtype != expected:
            raise InvalidBinary(
                f"cannot decode subtype {self._subtype} as a UUID with {rep.name} "
                f"(it needs subtype {expected})"
            )
        if len(self) != 16:
            raise InvalidBinary(f"a UUID needs 16 bytes, this binary has {len(self)}")
        raw = bytes(self)
        if rep == UuidRepresentation.JAVA_LEGACY:
            return uuid.UUID(bytes=_java_swap(raw))
        if rep == UuidRepresentation.CSHARP_LEGACY:
            return uuid.UUID(bytes_le=raw)
        return uuid.UUID(bytes=raw)

    # -- Vector (specs/bson-binary-vector) --------------------------------------------------

    @classmethod
    def from_vector(
        cls,
        vector: BinaryVector | Iterable[int] | Iterable[float],
        dtype: BinaryVectorDtype | None = None,
        padding: int = 0,
    ) -> Binary:
        """Pack a vector as binary subtype 9 (dtype byte, padding byte, little-endian data),
        validating the spec's invariants; a BinaryVector may be passed alone."""
        if isinstance(vector, BinaryVector):
            if dtype is not None:
                raise InvalidBinary("pass either a BinaryVector or data with a dtype, not both")
            values: list[Any] = list(vector.data)
            dtype, padding = vector.dtype, vector.padding
        else:
            if dtype is None:
                raise InvalidBinary("from_vector needs a dtype")
            values = list(vector)
        try:
            dtype = BinaryVectorDtype(dtype)
        except ValueError:
            raise InvalidBinary(f"unsupported vector dtype {dtype!r}") from None
        _check_padding(dtype, padding, len(values))
        header = bytes((dtype, padding))
        try:
            if dtype == BinaryVectorDtype.INT8:
                body = struct.pack(f"<{len(values)}b", *values)
            elif dtype == BinaryVectorDtype.PACKED_BIT:
                body = struct.pack(f"<{len(values)}B", *values)
            else:
                body = struct.pack(f"<{len(values)}f", *values)
        except (struct.error, TypeError, OverflowError) as exc:
            raise InvalidBinary(f"vector values do not fit dtype {dtype.name}: {exc}") from None
        if dtype == BinaryVectorDtype.PACKED_BIT and padding and body[-1] & ((1 << padding) - 1):
            raise InvalidBinary(
                f"the {padding} ignored bits of the last PACKED_BIT byte must be zero"
            )
        return cls(header + body, VECTOR_SUBTYPE)

    def as_vector(self) -> BinaryVector:
        """Unpack binary subtype 9 into a :class:`BinaryVector`, validating the metadata."""
        if self._subtype != VECTOR_SUBTYPE:
            raise InvalidBinary(f"binary subtype {self._subtype} is not a vector (9)")
        if len(self) < 2:
            raise InvalidBinary("a vector needs at least the dtype and padding bytes")
        try:
            dtype = BinaryVectorDtype(self[0])
        except ValueError:
            raise InvalidBinary(f"unsupported vector dtype 0x{self[0]:02x}") from None
        padding = self[1]
        body = memoryview(self)[2:]
        if dtype == BinaryVectorDtype.INT8:
            _check_padding(dtype, padding, len(body))
            return BinaryVector(list(struct.unpack(f"<{len(body)}b", body)), dtype, padding)
        if dtype == BinaryVectorDtype.PACKED_BIT:
            _check_padding(dtype, padding, len(body))
            if padding and body[-1] & ((1 << padding) - 1):
                raise InvalidBinary(
                    f"the {padding} ignored bits of the last PACKED_BIT byte must be zero"
                )
            return BinaryVector(list(body), dtype, padding)
        if len(body) % 4:
            raise InvalidBinary(
                f"FLOAT32 vector data must be a multiple of 4 bytes, not {len(body)}"
            )
        _check_padding(dtype, padding, len(body) // 4)
        return BinaryVector(list(struct.unpack(f"<{len(body) // 4}f", body)), dtype, padding)

    # -- value semantics ----------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Binary):
            return self._subtype == other.subtype and bytes.__eq__(self, other)
        # Not NotImplemented: bytes.__eq__ would then say Binary(b"x", 5) == b"x".
        return False

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return bytes.__hash__(self) ^ hash(self._subtype)

    def __repr__(self) -> str:
        return f"Binary({bytes(self)!r}, {self._subtype})"

    def __reduce__(self) -> tuple[type[Binary], tuple[bytes, int]]:
        return (Binary, (bytes(self), self._subtype))


def _java_swap(raw: bytes) -> bytes:
    """Java legacy byte order: each 8-byte half reversed."""
    return raw[7::-1] + raw[15:7:-1]


def _check_padding(dtype: BinaryVectorDtype, padding: int, count: int) -> None:
    if not isinstance(padding, int) or isinstance(padding, bool):
        raise InvalidBinary(f"vector padding must be an int, not {type(padding).__name__}")
    if dtype == BinaryVectorDtype.PACKED_BIT:
        if not 0 <= padding <= 7:
            raise InvalidBinary(f"PACKED_BIT padding must be in 0..7, not {padding}")
        if padding and count == 0:
            raise InvalidBinary("an empty PACKED_BIT vector must have padding 0")
    elif padding != 0:
        raise InvalidBinary(f"padding must be 0 for dtype {dtype.name}, not {padding}")
