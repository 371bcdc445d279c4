"""Write batch splitting at the exact limits."""

from __future__ import annotations

import pytest

from asyncmongo.core.wire.batching import (
    COMMAND_OVERHEAD,
    BatchLimits,
    message_overhead,
    split_batches,
)
from asyncmongo.core.wire.op_msg import DocumentSequence, encode_op_msg
from asyncmongo.errors import ConfigurationError, DocumentTooLarge, InvalidDocument


def docs(*sizes: int) -> list[bytes]:
    return [b"d" * size for size in sizes]


def test_message_overhead_matches_the_encoder() -> None:
    body = b"b" * 40
    statements = docs(10, 20)
    size = sum(map(len, encode_op_msg(1, body, [DocumentSequence("documents", statements)])))
    assert size == message_overhead("insert", len(body)) + 30


def test_all_fit() -> None:
    assert split_batches("insert", docs(10, 10, 10), 40, BatchLimits()) == [range(0, 3)]


def test_empty() -> None:
    assert split_batches("insert", [], 40, BatchLimits()) == []


def test_max_write_batch_size_exact() -> None:
    limits = BatchLimits(max_write_batch_size=2)
    assert split_batches("delete", docs(1, 1, 1, 1, 1), 40, limits) == [
        range(0, 2),
        range(2, 4),
        range(4, 5),
    ]


def test_message_size_exact_boundary() -> None:
    overhead = message_overhead("update", 40)
    limits = BatchLimits(max_message_size_bytes=overhead + 100)
    assert split_batches("update", docs(50, 50, 1), 40, limits) == [range(0, 2), range(2, 3)]
    assert split_batches("update", docs(50, 51), 40, limits) == [range(0, 1), range(1, 2)]
    assert split_batches("update", docs(100), 40, limits) == [range(0, 1)]


def test_insert_document_too_large() -> None:
    limits = BatchLimits(max_bson_object_size=100)
    assert split_batches("insert", docs(100), 40, limits) == [range(0, 1)]
    with pytest.raises(DocumentTooLarge) as info:
        split_batches("insert", docs(10, 101), 40, limits)
    assert isinstance(info.value, InvalidDocument)


def test_update_statement_allowance() -> None:
    limits = BatchLimits(max_bson_object_size=100)
    assert split_batches("update", docs(100 + COMMAND_OVERHEAD), 40, limits)
    with pytest.raises(DocumentTooLarge):
        split_batches("delete", docs(101 + COMMAND_OVERHEAD), 40, limits)


def test_statement_larger_than_message_room() -> None:
    limits = BatchLimits(max_message_size_bytes=message_overhead("insert", 40) + 10)
    with pytest.raises(DocumentTooLarge):
        split_batches("insert", docs(11), 40, limits)


def test_unknown_command() -> None:
    with pytest.raises(ConfigurationError):
        split_batches("find", docs(1), 40, BatchLimits())
