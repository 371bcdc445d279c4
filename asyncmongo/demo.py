"""A short tour of asyncmongo: ``python -m asyncmongo.demo``.

By default it starts an embedded simulated 3-member replica set (``asyncmongo.testing``, on
127.0.0.1, nothing to install), discovers it from one seed, runs CRUD, an aggregation and a
transaction, steps the primary down in the middle of the work and carries on without the
application noticing. ``--uri mongodb://...`` runs the same tour against a real deployment
(it writes to the ``asyncmongo_demo`` database), and ``--bson`` shows BSON round trips only:
documents with an ObjectId, a datetime, an Int64, a Decimal128 and a UUID encoded to bytes,
decoded back, and printed as Extended JSON (relaxed and canonical).
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Sequence
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


def bson_tour() -> None:
    opts = CodecOptions(tz_aware=True, uuid_representation=UuidRepresentation.STANDARD)
    print("asyncmongo demo: BSON round trips (encode -> decode -> Extended JSON)\n")
    for document in sample_documents():
        show_round_trip(document, opts)
        print()


async def deployment_tour(uri: str | None = None) -> None:
    """CRUD, aggregation, a transaction and a failover, against ``uri`` or an embedded set."""
    from asyncmongo.testing import ReplicaSet

    if uri is not None:
        await _client_tour(uri, None)
        return
    async with ReplicaSet(members=3) as rs:
        print(f"started a simulated replica set: {rs.uri}")
        await _client_tour(rs.uri, rs)


async def _client_tour(uri: str, rs: Any) -> None:
    from asyncmongo import AsyncMongoClient
    from asyncmongo.core.address import format_address as fmt

    seed = uri if rs is None else f"mongodb://{rs.members[1].host}/?replicaSet={rs.set_name}"
    async with AsyncMongoClient(seed, serverSelectionTimeoutMS=10_000) as client:
        await client.admin.command("ping")
        primary = client.primary
        members = ", ".join(sorted(fmt(node) for node in client.nodes))
        print(f"discovered from one seed: {members}; primary {primary and fmt(primary)}")
        orders = client.asyncmongo_demo.orders
        await orders.drop()
        await orders.insert_many(
            [{"item": item, "qty": qty} for item, qty in [("tea", 2), ("cake", 1), ("tea", 5)]]
        )
        await orders.update_one({"item": "cake"}, {"$inc": {"qty": 2}})
        cursor = await orders.aggregate(
            [{"$group": {"_id": "$item", "qty": {"$sum": "$qty"}}}, {"$sort": {"_id": 1}}]
        )
        totals = await cursor.to_list()
        print(f"totals by item: {[(t['_id'], t['qty']) for t in totals]}")

        async def transfer(session: Any) -> None:
            await orders.insert_one({"item": "coffee", "qty": 1}, session=session)
            await orders.update_one({"item": "tea"}, {"$inc": {"qty": -1}}, session=session)

        async with client.start_session() as session:
            await session.with_transaction(transfer)
        print(f"after a transaction: {await orders.count_documents({})} orders")

        if rs is not None:
            started = time.perf_counter()
            await rs.step_down()
            await orders.insert_one({"item": "scone", "qty": 3})
            elapsed_ms = (time.perf_counter() - started) * 1000
            new_primary = client.primary
            print(
                f"stepped {primary and fmt(primary)} down; the next insert went to "
                f"{new_primary and fmt(new_primary)} "
                f"{elapsed_ms:.0f} ms later, with no error surfaced to the application"
            )
        print(f"orders now: {await orders.count_documents({})}")
        await orders.drop()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m asyncmongo.demo", description=__doc__)
    parser.add_argument("--uri", help="run the tour against this deployment instead")
    parser.add_argument("--bson", action="store_true", help="show BSON round trips only")
    args = parser.parse_args(argv)
    if args.bson:
        bson_tour()
        return
    asyncio.run(deployment_tour(args.uri))
    print()
    bson_tour()


if __name__ == "__main__":
    main()
