"""CRC-32C (Castagnoli), the checksum of OP_MSG's optional ``checksum`` field.

The standard library has no CRC-32C, and servers never send checksums unless asked, so a
table-driven pure-Python implementation is plenty: it only runs when a peer sets
``checksumPresent``.
"""

from __future__ import annotations

_POLY = 0x82F63B78


def _make_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_TABLE = _make_table()


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """The CRC-32C of ``data`` (continuing from ``crc``), as an unsigned 32-bit int."""
    crc ^= 0xFFFFFFFF
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
