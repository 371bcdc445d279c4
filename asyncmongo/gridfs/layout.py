"""The pure arithmetic of a stored file: chunk counts and sizes, the chunk checks made on
download, the revision query, and index-key comparison (GridFS spec).

No I/O here, so every rule is tested without a server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from asyncmongo.errors import InvalidArgument
from asyncmongo.gridfs.errors import CorruptGridFile

__all__ = [
    "CHUNKS_INDEX",
    "DEFAULT_CHUNK_SIZE",
    "FILES_INDEX",
    "check_chunk",
    "check_chunk_size",
    "chunk_count",
    "expected_chunk_length",
    "has_index",
    "revision_query",
]

#: GridFSBucketOptions.chunkSizeBytes default: 255 KiB.
DEFAULT_CHUNK_SIZE = 255 * 1024
#: GridFS spec, Indexes: the files index, and the (unique) chunks index.
FILES_INDEX: tuple[tuple[str, int], ...] = (("filename", 1), ("uploadDate", 1))
CHUNKS_INDEX: tuple[tuple[str, int], ...] = (("files_id", 1), ("n", 1))


def check_chunk_size(chunk_size: Any) -> int:
    """``chunk_size`` if it is a positive int, else InvalidArgument."""
    if type(chunk_size) is not int or chunk_size <= 0:
        raise InvalidArgument(f"chunk_size_bytes must be a positive int, not {chunk_size!r}")
    return chunk_size


def chunk_count(length: int, chunk_size: int) -> int:
    """How many chunks a file of ``length`` bytes has (none for an empty file)."""
    return (length + chunk_size - 1) // chunk_size


def expected_chunk_length(n: int, length: int, chunk_size: int) -> int:
    """Every chunk but the last is ``chunk_size`` long; the last holds the rest."""
    if n < chunk_count(length, chunk_size) - 1:
        return chunk_size
    return length - n * chunk_size


def check_chunk(chunk: Mapping[str, Any], expected_n: int, length: int,
                chunk_size: int) -> bytes | None:
    """The data of ``chunk`` if it is the expected next chunk; None for an extra empty chunk
    (ignored, as drivers do); else CorruptGridFile naming what is wrong."""
    n = chunk.get("n")
    data = chunk.get("data")
    if not isinstance(data, bytes | bytearray):
        raise CorruptGridFile(f"chunk #{n!r} has no binary data field")
    if n != expected_n:
        raise CorruptGridFile(f"missing chunk: expected chunk #{expected_n}, found n={n!r}")
    if expected_n >= chunk_count(length, chunk_size):
        if data:
            raise CorruptGridFile(
                f"extra chunk found: expected {chunk_count(length, chunk_size)} chunks, "
                f"found chunk #{expected_n}"
            )
        return None
    want = expected_chunk_length(expected_n, length, chunk_size)
    if len(data) != want:
        raise CorruptGridFile(
            f"chunk #{expected_n} is {len(data)} bytes long, expected {want}"
        )
    return bytes(data)


def revision_query(revision: int) -> tuple[int, int]:
    """File Download by Filename: (uploadDate sort direction, documents to skip).

    0 is the original, 1 the first revision, ...; -1 the most recent, -2 the one before.
    """
    if type(revision) is not int:
        raise InvalidArgument(f"revision must be an int, not {revision!r}")
    if revision >= 0:
        return 1, revision
    return -1, -revision - 1


def _number(value: Any) -> Any:
    """1, 1.0 and Int64(1) compare equal: index key values by value (GridFS spec)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value)
    return value


def has_index(indexes: Sequence[Mapping[str, Any]], keys: tuple[tuple[str, int], ...]) -> bool:
    """Whether ``indexes`` (listIndexes documents) hold one on exactly ``keys``, comparing
    numeric values by value (an index made by the shell has double 1.0)."""
    want = [(name, _number(value)) for name, value in keys]
    for index in indexes:
        key = index.get("key")
        if isinstance(key, Mapping):
            if [(name, _number(value)) for name, value in key.items()] == want:
                return True
    return False
