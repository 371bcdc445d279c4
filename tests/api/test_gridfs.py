"""asyncmongo.gridfs against the simulated standalone: round trips, partial reads, revisions,
rename, delete, corrupt files, abort and cancellation, indexes, sessions and concerns."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.bson.binary import Binary
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.core.concern import WriteConcern
from asyncmongo.errors import ConfigurationError, InvalidArgument, InvalidOperation
from asyncmongo.gridfs import (
    DEFAULT_CHUNK_SIZE,
    AsyncGridFSBucket,
    CorruptGridFile,
    FileExists,
    GridFSError,
    NoFile,
)
from asyncmongo.gridfs.layout import FILES_INDEX, has_index, revision_query
from asyncmongo.monitoring import CommandStartedEvent
from asyncmongo.testing import Standalone

CHUNK = 7


class Client:
    """A client on a fresh simulated standalone, with the commands it started."""

    def __init__(self, client: AsyncMongoClient, events: list[Any]) -> None:
        self.client = client
        self.db = client.gridfs_tests
        self._events = events

    def bucket(self, **kwargs: Any) -> AsyncGridFSBucket:
        kwargs.setdefault("chunk_size_bytes", CHUNK)
        return AsyncGridFSBucket(self.db, **kwargs)

    def started(self, name: str | None = None) -> list[CommandStartedEvent]:
        return [e for e in self._events if isinstance(e, CommandStartedEvent)
                and (name is None or e.command_name == name)]

    def clear(self) -> None:
        self._events.clear()


@pytest.fixture
async def env() -> AsyncIterator[Client]:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            yield Client(client, events)


def _data(size: int) -> bytes:
    return bytes(i * 7 % 251 for i in range(size))


async def _chunks(env: Client, file_id: Any) -> list[dict[str, Any]]:
    return await env.db["fs.chunks"].find({"files_id": file_id}, sort=[("n", 1)]).to_list()


# -- round trips ----------------------------------------------------------------------------

@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK, 3 * CHUNK + 5])
async def test_round_trip_sizes(env: Client, size: int) -> None:
    bucket = env.bucket()
    data = _data(size)
    file_id = await bucket.upload_from_stream("f", data, metadata={"k": size})
    out = await bucket.open_download_stream(file_id)
    assert await out.read() == data
    assert (out.length, out.chunk_size, out.filename, out.metadata) == (size, CHUNK, "f",
                                                                         {"k": size})
    chunks = await _chunks(env, file_id)
    assert [c["n"] for c in chunks] == list(range(-(-size // CHUNK)))
    assert b"".join(c["data"] for c in chunks) == data
    assert all(len(c["data"]) == CHUNK for c in chunks[:-1])


async def test_a_large_file_with_the_default_chunk_size(env: Client) -> None:
    bucket = AsyncGridFSBucket(env.db)
    data = _data(2 * DEFAULT_CHUNK_SIZE + 1000)
    file_id = await bucket.upload_from_stream("big", io.BytesIO(data))
    sink = io.BytesIO()
    await bucket.download_to_stream(file_id, sink)
    assert sink.getvalue() == data
    assert len(await _chunks(env, file_id)) == 3


async def test_the_files_document_has_the_spec_fields_and_no_metadata_unless_given(
    env: Client,
) -> None:
    bucket = env.bucket()
    file_id = await bucket.upload_from_stream("doc", b"abc")
    document = await env.db["fs.files"].find_one({"_id": file_id})
    assert list(document) == ["_id", "length", "chunkSize", "uploadDate", "filename"]
    assert (document["length"], document["chunkSize"], document["filename"]) == (3, CHUNK, "doc")
    assert type(document["length"]).__name__ == "Int64"  # the spec's type, as PyMongo writes it
    assert "md5" not in document


async def test_sync_and_async_sources_and_destinations(env: Client) -> None:
    bucket = env.bucket()
    data = _data(30)

    class AsyncSource:
        def __init__(self) -> None:
            self.stream = io.BytesIO(data)

        async def read(self, size: int) -> bytes:
            await asyncio.sleep(0)
            return self.stream.read(3)  # shorter than asked: still cut into whole chunks

    class AsyncSink:
        def __init__(self) -> None:
            self.pieces: list[bytes] = []

        async def write(self, piece: bytes) -> None:
            self.pieces.append(piece)

    file_id = await bucket.upload_from_stream("s", AsyncSource())
    assert [len(c["data"]) for c in await _chunks(env, file_id)] == [7, 7, 7, 7, 2]
    sink = AsyncSink()
    await bucket.download_to_stream(file_id, sink)
    assert b"".join(sink.pieces) == data
    with pytest.raises(InvalidArgument):
        await bucket.upload_from_stream("bad", 42)
    with pytest.raises(InvalidArgument):
        await bucket.download_to_stream(file_id, object())


async def test_an_upload_stream_with_odd_writes(env: Client) -> None:
    bucket = env.bucket()
    data = _data(40)
    async with bucket.open_upload_stream("w", metadata={"a": 1}) as grid_in:
        await grid_in.write(data[:3])
        await grid_in.write(memoryview(data[3:20]))
        await grid_in.writelines([data[20:21], bytearray(data[21:40])])
        assert grid_in.length == 40 and grid_in.upload_date is None
    assert grid_in.closed and grid_in.upload_date is not None
    assert isinstance(grid_in._id, ObjectId)
    out = await bucket.open_download_stream(grid_in._id)
    assert await out.read() == data
    assert out.metadata == {"a": 1}
    with pytest.raises(InvalidOperation):
        await grid_in.write(b"more")
    await grid_in.close()  # closing again does nothing


async def test_a_custom_id_and_a_duplicate_one(env: Client) -> None:
    bucket = env.bucket()
    await bucket.upload_from_stream_with_id("my-id", "x", b"1234")
    assert await (await bucket.open_download_stream("my-id")).read() == b"1234"
    with pytest.raises(FileExists):
        await bucket.upload_from_stream_with_id("my-id", "x", b"")


# -- partial reads --------------------------------------------------------------------------

async def test_partial_reads_seek_and_tell(env: Client) -> None:
    bucket = env.bucket()
    data = _data(50)
    file_id = await bucket.upload_from_stream("p", data)
    out = await bucket.open_download_stream(file_id)
    assert await out.read(3) == data[:3] and out.tell() == 3
    assert await out.read(10) == data[3:13]
    assert await out.readchunk() == data[13:14]  # the rest of chunk #1
    assert out.seek(30) == 30 and await out.read(4) == data[30:34]
    assert out.seek(-4, 1) == 30 and await out.read(2) == data[30:32]
    assert out.seek(-5, 2) == 45 and await out.read() == data[45:]
    assert await out.read() == b"" and await out.readchunk() == b""
    out.seek(100)
    assert await out.read() == b""
    with pytest.raises(InvalidArgument):
        out.seek(-1)
    with pytest.raises(InvalidArgument):
        out.seek(0, 3)
    out.seek(8)
    assert [piece async for piece in out] == [data[8:14]] + [
        data[i:i + CHUNK] for i in range(14, 50, CHUNK)]
    await out.close()


async def test_seeking_reads_only_the_chunks_from_there(env: Client) -> None:
    bucket = env.bucket()
    file_id = await bucket.upload_from_stream("p", _data(70))
    out = await bucket.open_download_stream(file_id)
    env.clear()
    out.seek(45)
    assert await out.read(2) == _data(70)[45:47]
    (find,) = env.started("find")
    assert find.command["filter"] == {"files_id": file_id, "n": {"$gte": 6}}
    assert find.command["sort"] == {"n": 1}
    await out.close()


async def test_an_empty_file_never_queries_the_chunks(env: Client) -> None:
    bucket = env.bucket()
    file_id = await bucket.upload_from_stream("e", b"")
    assert await _chunks(env, file_id) == []
    env.clear()
    out = await bucket.open_download_stream(file_id)
    assert await out.read() == b""
    assert [e.command["find"] for e in env.started("find")] == ["fs.files"]


# -- by name --------------------------------------------------------------------------------

async def test_revisions_by_name(env: Client) -> None:
    bucket = env.bucket()
    for i in range(3):
        await bucket.upload_from_stream("r", b"rev%d" % i)
        await asyncio.sleep(0.002)  # distinct uploadDates (millisecond precision)
    await bucket.upload_from_stream("other", b"no")
    for revision, want in [(-1, b"rev2"), (0, b"rev0"), (1, b"rev1"), (2, b"rev2"),
                           (-2, b"rev1"), (-3, b"rev0")]:
        out = await bucket.open_download_stream_by_name("r", revision)
        assert await out.read() == want, revision
    assert await (await bucket.open_download_stream_by_name("r")).read() == b"rev2"
    sink = io.BytesIO()
    await bucket.download_to_stream_by_name("r", sink, revision=0)
    assert sink.getvalue() == b"rev0"
    with pytest.raises(NoFile, match="no revision 3"):
        await bucket.open_download_stream_by_name("r", 3)
    with pytest.raises(NoFile, match="named 'missing'"):
        await bucket.open_download_stream_by_name("missing")


def test_revision_query() -> None:
    assert [revision_query(r) for r in (0, 1, 2, -1, -2, -3)] == [
        (1, 0), (1, 1), (1, 2), (-1, 0), (-1, 1), (-1, 2)]
    with pytest.raises(InvalidArgument):
        revision_query("1")  # type: ignore[arg-type]


# -- find, rename, delete, drop ---------------------------------------------------------

async def test_find_files_documents(env: Client) -> None:
    bucket = env.bucket()
    for name in ("b", "a", "c"):
        await bucket.upload_from_stream(name, b"x", metadata={"kind": name == "a"})
    names = [d["filename"] async for d in bucket.find({}, sort=[("filename", -1)], limit=2)]
    assert names == ["c", "b"]
    assert [d["filename"] for d in await bucket.find({"metadata.kind": True}).to_list()] == ["a"]


async def test_rename_and_rename_by_name(env: Client) -> None:
    bucket = env.bucket()
    first = await bucket.upload_from_stream("old", b"1")
    await bucket.upload_from_stream("old", b"2")
    await bucket.rename(first, "new")
    assert (await bucket.open_download_stream(first)).filename == "new"
    await bucket.rename_by_name("old", "newer")
    assert await (await bucket.open_download_stream_by_name("newer")).read() == b"2"
    with pytest.raises(NoFile):
        await bucket.rename(ObjectId(), "x")
    with pytest.raises(NoFile):
        await bucket.rename_by_name("old", "x")


async def test_delete_removes_the_files_document_then_the_chunks(env: Client) -> None:
    bucket = env.bucket()
    file_id = await bucket.upload_from_stream("d", _data(20))
    env.clear()
    await bucket.delete(file_id)
    assert [(e.command_name, e.command[e.command_name]) for e in env.started()] == [
        ("delete", "fs.files"), ("delete", "fs.chunks")]
    assert await _chunks(env, file_id) == []
    with pytest.raises(NoFile):
        await bucket.open_download_stream(file_id)


async def test_delete_of_a_missing_file_still_removes_orphan_chunks(env: Client) -> None:
    bucket = env.bucket()
    orphan = ObjectId()
    await env.db["fs.chunks"].insert_many(
        [{"files_id": orphan, "n": n, "data": Binary(b"abc", 0)} for n in range(2)])
    with pytest.raises(NoFile):
        await bucket.delete(orphan)
    assert await _chunks(env, orphan) == []


async def test_delete_by_name(env: Client) -> None:
    bucket = env.bucket()
    ids = [await bucket.upload_from_stream("dup", _data(10)) for _ in range(2)]
    keep = await bucket.upload_from_stream("keep", b"k")
    await bucket.delete_by_name("dup")
    assert [d["_id"] for d in await bucket.find({}).to_list()] == [keep]
    for file_id in ids:
        assert await _chunks(env, file_id) == []
    with pytest.raises(NoFile):
        await bucket.delete_by_name("dup")


async def test_drop(env: Client) -> None:
    bucket = env.bucket()
    await bucket.upload_from_stream("x", b"12345678")
    await bucket.drop()
    assert await env.db["fs.files"].count_documents({}) == 0
    assert await env.db["fs.chunks"].count_documents({}) == 0
    await bucket.upload_from_stream("x", b"1")  # indexes are checked again after a drop
    cursor = await env.db["fs.files"].list_indexes()
    assert has_index(await cursor.to_list(), FILES_INDEX)


# -- corrupt files --------------------------------------------------------------------------

async def _corrupt(env: Client, change: Any) -> None:
    bucket = env.bucket()
    file_id = await bucket.upload_from_stream("c", _data(20))  # chunks 7, 7, 6
    await change(env.db["fs.chunks"], file_id)
    out = await bucket.open_download_stream(file_id)
    with pytest.raises(CorruptGridFile):
        await out.read()
    await out.close()


async def test_a_missing_middle_chunk_is_corrupt(env: Client) -> None:
    await _corrupt(env, lambda c, i: c.delete_one({"files_id": i, "n": 1}))


async def test_a_missing_last_chunk_is_corrupt(env: Client) -> None:
    await _corrupt(env, lambda c, i: c.delete_one({"files_id": i, "n": 2}))


async def test_a_short_chunk_is_corrupt(env: Client) -> None:
    await _corrupt(env, lambda c, i: c.update_one(
        {"files_id": i, "n": 0}, {"$set": {"data": Binary(b"abc", 0)}}))


async def test_a_long_last_chunk_is_corrupt(env: Client) -> None:
    await _corrupt(env, lambda c, i: c.update_one(
        {"files_id": i, "n": 2}, {"$set": {"data": Binary(b"12345678", 0)}}))


async def test_an_extra_chunk_is_corrupt_unless_empty(env: Client) -> None:
    await _corrupt(env, lambda c, i: c.insert_one(
        {"files_id": i, "n": 3, "data": Binary(b"x", 0)}))
    bucket = env.bucket()
    file_id = await bucket.upload_from_stream("e", _data(7))
    await env.db["fs.chunks"].insert_one({"files_id": file_id, "n": 1, "data": Binary(b"", 0)})
    assert await (await bucket.open_download_stream(file_id)).read() == _data(7)


async def test_a_legacy_files_document_with_double_sizes_reads(env: Client) -> None:
    await env.db["fs.files"].insert_one({"_id": 9, "length": 5.0, "chunkSize": 4.0})
    await env.db["fs.chunks"].insert_many([
        {"files_id": 9, "n": 0, "data": Binary(b"abcd", 0)},
        {"files_id": 9, "n": 1, "data": Binary(b"e", 0)}])
    out = await env.bucket().open_download_stream(9)
    assert (await out.read(), out.length, out.chunk_size, out.filename) == (b"abcde", 5, 4, None)


async def test_a_bad_files_document_is_corrupt(env: Client) -> None:
    await env.db["fs.files"].insert_one({"_id": 1, "length": "x", "chunkSize": 4})
    with pytest.raises(CorruptGridFile):
        await env.bucket().open_download_stream(1)
    assert issubclass(CorruptGridFile, GridFSError) and issubclass(NoFile, GridFSError)


# -- abort and cancellation -----------------------------------------------------------------

async def test_abort_deletes_the_stored_chunks(env: Client) -> None:
    bucket = env.bucket()
    grid_in = bucket.open_upload_stream("a")
    await grid_in.write(_data(30))
    assert len(await _chunks(env, grid_in._id)) == 4
    await grid_in.abort()
    assert await _chunks(env, grid_in._id) == []
    assert await env.db["fs.files"].count_documents({}) == 0
    with pytest.raises(InvalidOperation):
        await grid_in.write(b"x")
    await grid_in.abort()  # again: nothing to do


async def test_an_exception_in_the_context_manager_aborts(env: Client) -> None:
    bucket = env.bucket()
    with pytest.raises(RuntimeError):
        async with bucket.open_upload_stream("a") as grid_in:
            await grid_in.write(_data(30))
            raise RuntimeError("boom")
    assert await _chunks(env, grid_in._id) == []
    assert await env.db["fs.files"].count_documents({}) == 0


async def test_a_failing_source_aborts_and_its_error_is_raised(env: Client) -> None:
    bucket = env.bucket()

    class Failing:
        calls = 0

        def read(self, size: int) -> bytes:
            self.calls += 1
            if self.calls > 2:
                raise OSError("disk gone")
            return _data(min(size, 20))

    with pytest.raises(OSError, match="disk gone"):
        await bucket.upload_from_stream("f", Failing())
    assert await env.db["fs.chunks"].count_documents({}) == 0
    assert await env.db["fs.files"].count_documents({}) == 0


async def test_a_cancelled_upload_leaves_no_files_document(env: Client) -> None:
    bucket = env.bucket()
    started = asyncio.Event()

    class Slow:
        calls = 0

        async def read(self, size: int) -> bytes:
            self.calls += 1
            if self.calls > 3:
                started.set()
                await asyncio.sleep(60)
            return _data(min(size, 20))

    task = asyncio.create_task(bucket.upload_from_stream("slow", Slow()))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await env.db["fs.files"].count_documents({}) == 0
    assert await env.db["fs.chunks"].count_documents({}) == 0


# -- indexes, sessions, concerns ------------------------------------------------------------

async def test_indexes_are_made_before_the_first_write_only_when_files_is_empty(
    env: Client,
) -> None:
    bucket = env.bucket()
    await bucket.upload_from_stream("a", b"12345678")
    names = [e.command_name for e in env.started()]
    assert names[:5] == ["find", "listIndexes", "createIndexes", "listIndexes",
                         "createIndexes"]
    chunks_indexes = await (await env.db["fs.chunks"].list_indexes()).to_list()
    assert [i.get("unique") for i in chunks_indexes if i["name"] == "files_id_1_n_1"] == [True]
    env.clear()
    await bucket.upload_from_stream("b", b"1")  # once per bucket
    await env.bucket().upload_from_stream("c", b"1")  # a new bucket: files is not empty
    assert "listIndexes" not in [e.command_name for e in env.started()]
    assert "createIndexes" not in [e.command_name for e in env.started()]


async def test_existing_indexes_with_double_keys_are_not_created_again(env: Client) -> None:
    await env.db["fs.files"].create_index([("filename", 1.0), ("uploadDate", 1.0)])
    await env.db["fs.chunks"].create_index([("files_id", 1.0), ("n", 1)], unique=True)
    env.clear()
    await env.bucket().upload_from_stream("a", b"1")
    assert "createIndexes" not in [e.command_name for e in env.started()]


def test_has_index_compares_numbers_by_value() -> None:
    indexes = [{"key": {"_id": 1}}, {"key": {"filename": 1.0, "uploadDate": 1}}]
    assert has_index(indexes, FILES_INDEX)
    assert not has_index([{"key": {"uploadDate": 1, "filename": 1}}], FILES_INDEX)
    assert not has_index([{"key": {"filename": -1, "uploadDate": 1}}], FILES_INDEX)


async def test_a_session_is_used_for_every_command(env: Client) -> None:
    bucket = env.bucket()
    async with env.client.start_session() as session:
        env.clear()
        file_id = await bucket.upload_from_stream("s", _data(20), session=session)
        out = await bucket.open_download_stream(file_id, session=session)
        assert await out.read() == _data(20)
        await bucket.rename(file_id, "t", session=session)
        await bucket.delete(file_id, session=session)
        lsid = dict(session.session_id)
    commands = env.started()
    assert len(commands) >= 8
    assert all(dict(e.command["lsid"]) == lsid for e in commands), [
        e.command_name for e in commands if dict(e.command.get("lsid", {})) != lsid]


async def test_the_bucket_write_concern_is_sent(env: Client) -> None:
    bucket = env.bucket(write_concern=WriteConcern(w=1, journal=True), bucket_name="wc")
    await bucket.upload_from_stream("a", b"123456789")
    inserts = env.started("insert")
    # the whole chunks as they are read, the last one on close, then the files document
    assert [e.command["insert"] for e in inserts] == ["wc.chunks", "wc.chunks", "wc.files"]
    assert all(e.command["writeConcern"] == {"w": 1, "j": True} for e in inserts)
    with pytest.raises(ConfigurationError):
        env.bucket(write_concern=WriteConcern(w=0))
    with pytest.raises(InvalidArgument):
        env.bucket(chunk_size_bytes=0)
    assert "wc" in repr(bucket) and "chunk size 7" in repr(bucket)


async def test_readline_reads_up_to_each_newline_across_chunks(env: Client) -> None:
    bucket = env.bucket(chunk_size_bytes=4)
    await bucket.upload_from_stream_with_id(1, "lines.txt", b"one\ntwo\nthree")
    out = await bucket.open_download_stream(1)
    assert out.name == out.filename == "lines.txt"
    assert await out.readline() == b"one\n"
    assert await out.readline(2) == b"tw"
    assert await out.readline() == b"o\n"
    assert await out.readline() == b"three"
    assert await out.readline() == b""
    assert out.tell() == 13
