"""asyncmongo.gridfs against jongodb, with PyMongo's gridfs as the independent peer: a file
stored by either driver reads back the same through the other."""

from __future__ import annotations

import asyncio
import os

import bson
import gridfs as pymongo_gridfs
import pytest
from pymongo import MongoClient

from asyncmongo import AsyncMongoClient
from asyncmongo.gridfs import AsyncGridFSBucket, NoFile
from tests.support.jongodb import jongodb_uri  # noqa: F401 - the fixture

pytestmark = pytest.mark.jongodb

_DATA = bytes(range(256)) * 5 + b"tail"


def _pymongo_round_trip(uri: str, database: str, file_id: str) -> tuple[bytes, str]:
    """PyMongo reads asyncmongo's file, then stores its own; (bytes read, its file id), ids
    as hex strings (each driver has its own ObjectId class)."""
    with MongoClient(uri) as client:
        bucket = pymongo_gridfs.GridFSBucket(client[database], bucket_name="peer")
        read = bucket.open_download_stream(bson.ObjectId(file_id)).read()
        own = bucket.upload_from_stream("from-pymongo", _DATA[::-1], chunk_size_bytes=100)
        return read, str(own)


async def test_files_cross_between_asyncmongo_and_pymongo(jongodb_uri: str) -> None:  # noqa: F811
    database = f"gridfs_{os.getpid()}"
    async with AsyncMongoClient(jongodb_uri) as client:
        bucket = AsyncGridFSBucket(client[database], bucket_name="peer", chunk_size_bytes=97)
        file_id = await bucket.upload_from_stream("from-asyncmongo", _DATA, metadata={"a": 1})
        read, pymongo_id = await asyncio.to_thread(
            _pymongo_round_trip, jongodb_uri, database, str(file_id))
        assert read == _DATA
        out = await bucket.open_download_stream_by_name("from-pymongo")
        assert str(out._id) == pymongo_id and out.chunk_size == 100
        out.seek(1000)
        assert await out.read() == _DATA[::-1][1000:]
        await bucket.rename(file_id, "renamed")
        await bucket.delete(file_id)
        with pytest.raises(NoFile):
            await bucket.open_download_stream(file_id)
