"""KMIP's TTLV encoding (KMIP 1.x, section 9.1): each item is a 3-byte tag, a 1-byte type, a
4-byte length and the value padded to a multiple of 8 bytes. Pure: bytes in, items out."""

from __future__ import annotations

import datetime
import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

__all__ = ["Item", "Tag", "Type", "decode", "encode", "structure"]


class Type(IntEnum):
    STRUCTURE = 0x01
    INTEGER = 0x02
    LONG_INTEGER = 0x03
    BIG_INTEGER = 0x04
    ENUMERATION = 0x05
    BOOLEAN = 0x06
    TEXT_STRING = 0x07
    BYTE_STRING = 0x08
    DATE_TIME = 0x09
    INTERVAL = 0x0A


class Tag(IntEnum):
    """The tags libmongocrypt's requests and replies use."""

    ACTIVATION_DATE = 0x420001
    ATTRIBUTE = 0x420008
    ATTRIBUTE_NAME = 0x42000A
    ATTRIBUTE_VALUE = 0x42000B
    BATCH_COUNT = 0x42000D
    BATCH_ITEM = 0x42000F
    BLOCK_CIPHER_MODE = 0x420011
    CRYPTOGRAPHIC_ALGORITHM = 0x420028
    CRYPTOGRAPHIC_LENGTH = 0x42002A
    CRYPTOGRAPHIC_PARAMETERS = 0x42002B
    CRYPTOGRAPHIC_USAGE_MASK = 0x42002C
    IV_COUNTER_NONCE = 0x42003D
    KEY_BLOCK = 0x420040
    KEY_FORMAT_TYPE = 0x420042
    KEY_MATERIAL = 0x420043
    KEY_VALUE = 0x420045
    OBJECT_TYPE = 0x420057
    OPERATION = 0x42005C
    PADDING_METHOD = 0x42005F
    PROTOCOL_VERSION = 0x420069
    PROTOCOL_VERSION_MAJOR = 0x42006A
    PROTOCOL_VERSION_MINOR = 0x42006B
    REQUEST_HEADER = 0x420077
    REQUEST_MESSAGE = 0x420078
    REQUEST_PAYLOAD = 0x420079
    RESPONSE_HEADER = 0x42007A
    RESPONSE_MESSAGE = 0x42007B
    RESPONSE_PAYLOAD = 0x42007C
    RESULT_MESSAGE = 0x42007D
    RESULT_REASON = 0x42007E
    RESULT_STATUS = 0x42007F
    SECRET_DATA = 0x420085
    SECRET_DATA_TYPE = 0x420086
    STATE = 0x42008D
    SYMMETRIC_KEY = 0x42008F
    TEMPLATE_ATTRIBUTE = 0x420091
    TIME_STAMP = 0x420092
    UNIQUE_IDENTIFIER = 0x420094
    DATA = 0x4200C2


@dataclass(frozen=True, slots=True)
class Item:
    """One TTLV item: a structure's value is a tuple of items."""

    tag: int
    type: Type
    value: Any

    def find(self, *path: int) -> Item | None:
        """The first item down ``path`` (tags of nested structures), or None."""
        item: Item | None = self
        for tag in path:
            if item is None or item.type != Type.STRUCTURE:
                return None
            item = next((child for child in item.value if child.tag == tag), None)
        return item


def _pad(size: int) -> int:
    return (8 - size % 8) % 8


def decode(data: bytes) -> tuple[Item, int]:
    """The item at the start of ``data`` and its encoded size (ValueError if malformed)."""
    if len(data) < 8:
        raise ValueError("a TTLV item needs 8 header bytes")
    tag = int.from_bytes(data[:3], "big")
    kind = Type(data[3])
    length = int.from_bytes(data[4:8], "big")
    end = 8 + length
    if len(data) < end:
        raise ValueError("truncated TTLV item")
    raw = data[8:end]
    value: Any
    if kind == Type.STRUCTURE:
        children, offset = [], 0
        while offset < length:
            child, size = decode(raw[offset:])
            children.append(child)
            offset += size
        value = tuple(children)
    elif kind in (Type.INTEGER, Type.ENUMERATION, Type.INTERVAL):
        value = struct.unpack(">i" if kind == Type.INTEGER else ">I", raw[:4])[0]
    elif kind in (Type.LONG_INTEGER, Type.DATE_TIME):
        value = struct.unpack(">q", raw[:8])[0]
    elif kind == Type.BOOLEAN:
        value = raw != bytes(8)
    elif kind == Type.TEXT_STRING:
        value = raw.decode()
    else:
        value = bytes(raw)
    return Item(tag, kind, value), end + (0 if kind == Type.STRUCTURE else _pad(length))


def encode(item: Item) -> bytes:
    """The TTLV bytes of ``item``."""
    value = item.value
    if item.type == Type.STRUCTURE:
        raw = b"".join(encode(child) for child in value)
    elif item.type in (Type.INTEGER, Type.ENUMERATION, Type.INTERVAL):
        raw = struct.pack(">i" if item.type == Type.INTEGER else ">I", value)
    elif item.type in (Type.LONG_INTEGER, Type.DATE_TIME):
        if isinstance(value, datetime.datetime):
            value = int(value.timestamp())
        raw = struct.pack(">q", value)
    elif item.type == Type.BOOLEAN:
        raw = struct.pack(">q", 1 if value else 0)
    elif item.type == Type.TEXT_STRING:
        raw = value.encode()
    else:
        raw = bytes(value)
    header = item.tag.to_bytes(3, "big") + bytes([item.type]) + len(raw).to_bytes(4, "big")
    return header + raw + bytes(_pad(len(raw)))


def structure(tag: int, *children: Item) -> Item:
    return Item(tag, Type.STRUCTURE, tuple(children))
