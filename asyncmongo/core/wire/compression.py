"""OP_COMPRESSED (compression spec): compressors, negotiation and the never-compress list.

snappy (raw block format, as the server uses it), zlib and zstd all come from ``cramjam``,
imported by the first message compressed or inflated: compression is off unless the URI
asks for it, and a client without it never loads cramjam (about 1.6 MB of resident memory).
A reply may be compressed with any compressor the server likes, so decompression dispatches on
the message's own ``compressorId``; the declared ``uncompressedSize`` is checked against
``maxMessageSizeBytes`` *before* inflating (no decompression bombs) and against the result after.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asyncmongo.core.wire.opcodes import HEADER, HEADER_SIZE, OpCode
from asyncmongo.errors import ConfigurationError, ProtocolError

#: originalOpcode, uncompressedSize, compressorId.
COMPRESSED_PREFIX = struct.Struct("<iiB")


class Compressor(enum.IntEnum):
    """Compressor ids (compression spec, "Compressor IDs"); the name is the handshake value."""

    NOOP = 0
    SNAPPY = 1
    ZLIB = 2
    ZSTD = 3

    @property
    def handshake_name(self) -> str:
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> Compressor:
        try:
            return cls[name.upper()]
        except KeyError:
            raise ConfigurationError(f"unknown compressor {name!r}") from None


#: The handshake values a client may ask for (noop is for tests only, never negotiated).
SUPPORTED_COMPRESSORS = ("snappy", "zlib", "zstd")

#: Compression spec, "Messages not allowed to be compressed" (plus legacy hello's casings).
NEVER_COMPRESS = frozenset(
    {
        "hello",
        "ismaster",
        "saslstart",
        "saslcontinue",
        "getnonce",
        "authenticate",
        "createuser",
        "updateuser",
        "copydbsaslstart",
        "copydbgetnonce",
        "copydb",
    }
)


def may_compress(command_name: str) -> bool:
    """False for the commands the compression spec forbids compressing (case-insensitive)."""
    return command_name.lower() not in NEVER_COMPRESS


@dataclass(frozen=True, slots=True)
class CompressionSettings:
    """The client's ``compressors`` (priority order) and ``zlibCompressionLevel``."""

    compressors: tuple[str, ...] = ()
    zlib_compression_level: int = -1

    def __post_init__(self) -> None:
        for name in self.compressors:
            if name not in SUPPORTED_COMPRESSORS:
                raise ConfigurationError(f"unsupported compressor {name!r}")
        if not -1 <= self.zlib_compression_level <= 9:
            raise ConfigurationError("zlibCompressionLevel must be between -1 and 9")


def negotiate(settings: CompressionSettings, hello_reply: Mapping[str, Any]) -> Compressor | None:
    """The first client compressor the server also lists (spec: client order wins), or None."""
    offered = hello_reply.get("compression")
    if not isinstance(offered, list):
        return None
    for name in settings.compressors:
        if name in offered:
            return Compressor.from_name(name)
    return None


def compress(compressor: Compressor, data: bytes, zlib_level: int = -1) -> bytes:
    """Compress ``data`` with ``compressor``."""
    import cramjam

    if compressor is Compressor.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if compressor is Compressor.ZLIB:
        return bytes(cramjam.zlib.compress(data, level=6 if zlib_level < 0 else zlib_level))
    if compressor is Compressor.ZSTD:
        return bytes(cramjam.zstd.compress(data))
    return bytes(data)


def decompress(compressor_id: int, data: bytes | memoryview, uncompressed_size: int) -> bytes:
    """Inflate one OP_COMPRESSED payload; every failure is a ProtocolError."""
    try:
        compressor = Compressor(compressor_id)
    except ValueError:
        raise ProtocolError(f"OP_COMPRESSED has an unknown compressorId {compressor_id}") from None
    import cramjam

    try:
        out = _inflate(compressor, bytes(data), uncompressed_size)
    except (cramjam.DecompressionError, ValueError, OverflowError) as exc:
        raise ProtocolError(f"cannot {compressor.handshake_name}-decompress a reply") from exc
    if len(out) != uncompressed_size:
        raise ProtocolError(
            f"OP_COMPRESSED declared {uncompressed_size} bytes but inflated to {len(out)}"
        )
    return out


def _inflate(compressor: Compressor, data: bytes, size: int) -> bytes:
    import cramjam

    if compressor is Compressor.SNAPPY:
        if cramjam.snappy.decompress_raw_len(data) != size:
            raise ValueError("snappy length prefix disagrees with uncompressedSize")
        return bytes(cramjam.snappy.decompress_raw(data))
    if compressor is Compressor.ZLIB:
        return bytes(cramjam.zlib.decompress(data, output_len=size))
    if compressor is Compressor.ZSTD:
        return bytes(cramjam.zstd.decompress(data, output_len=size))
    return data


def encode_op_compressed(
    request_id: int,
    original_opcode: int,
    payload: Iterable[bytes],
    compressor: Compressor,
    zlib_level: int = -1,
    response_to: int = 0,
) -> list[bytes]:
    """Wrap a message body (the bytes after its header) in OP_COMPRESSED."""
    raw = b"".join(payload)
    packed = compress(compressor, raw, zlib_level)
    prefix = COMPRESSED_PREFIX.pack(original_opcode, len(raw), compressor)
    length = HEADER_SIZE + len(prefix) + len(packed)
    return [HEADER.pack(length, request_id, response_to, OpCode.OP_COMPRESSED), prefix, packed]


def decode_op_compressed(data: bytes | memoryview, max_message_size: int) -> tuple[int, bytes]:
    """``(originalOpcode, inflated body)`` from the bytes after an OP_COMPRESSED header."""
    if len(data) < COMPRESSED_PREFIX.size:
        raise ProtocolError("OP_COMPRESSED too short for its prefix")
    opcode, size, compressor_id = COMPRESSED_PREFIX.unpack_from(data, 0)
    if opcode == OpCode.OP_COMPRESSED:
        raise ProtocolError("OP_COMPRESSED wraps another OP_COMPRESSED")
    if size < 0 or size + HEADER_SIZE > max_message_size:
        raise ProtocolError(f"OP_COMPRESSED uncompressedSize {size} exceeds the message limit")
    return opcode, decompress(compressor_id, memoryview(data)[COMPRESSED_PREFIX.size :], size)


def handshake_compressors(settings: CompressionSettings) -> Sequence[str]:
    """The ``compression`` array of the handshake (empty when none is configured)."""
    return list(settings.compressors)
