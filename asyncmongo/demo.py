"""A short tour of asyncmongo: ``python -m asyncmongo.demo``.

For now it shows BSON round trips: a document with an ObjectId, a datetime, an Int64, a
Decimal128 and a UUID is encoded to BSON bytes, decoded back, and printed as Extended JSON
(relaxed and canonical). Later it will also start a simulated deployment and run a few
operations against it.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from asyncmongo.bson import (
    Binary,
    CodecOptions,
    Decimal128,
    Int64,
    ObjectId,
    Regex,
    Timestamp,
    UuidRepresentation,
    decode,
    encode,
)
from asyncmongo.bson.json_util import JSONMode, JSONOptions, dumps


def sample_documents() -> list[dict[str, Any]]:
    """A few documents that exercise the BSON types users meet first."""
    fixed_uuid = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    return [
        {
            "_id": ObjectId("65f1c0ffee0ddba11ca7f00d"),
            "name": "Ada",
            "visits": Int64(42),
            "balance": Decimal128("1234.50"),
            "joined": datetime(2024, 3, 13, 9, 30, tzinfo=UTC),
        },
        {
            "session": Binary.from_uuid(fixed_uuid),
            "tags": ["vip", "beta"],
            "pattern": Regex("^ada", "i"),
            "op_time": Timestamp(1_700_000_000, 1),
            "nested": {"ok": True, "ratio": 0.25, "nothing": None},
        },
    ]


def show_round_trip(document: dict[str, Any], opts: CodecOptions) -> None:
    data = encode(document, codec_options=opts)
    decoded = decode(data, opts)
    print(f"BSON ({len(data)} bytes): {data[:32].hex()}{'...' if len(data) > 32 else ''}")
    print(f"  decoded   : {decoded!r}")
    for mode in (JSONMode.RELAXED, JSONMode.CANONICAL):
        json_options = JSONOptions.from_codec_options(opts, json_mode=mode)
        print(f"  {mode.name.lower():<10}: {dumps(decoded, json_options)}")
    print(f"  lossless  : {encode(decoded, codec_options=opts) == data}")


def main() -> None:
    opts = CodecOptions(tz_aware=True, uuid_representation=UuidRepresentation.STANDARD)
    print("asyncmongo demo: BSON round trips (encode -> decode -> Extended JSON)\n")
    for document in sample_documents():
        show_round_trip(document, opts)
        print()


if __name__ == "__main__":
    main()
