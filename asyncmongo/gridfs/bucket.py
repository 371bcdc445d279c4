"""AsyncGridFSBucket: store and fetch files larger than a document (GridFS spec, Basic and
Advanced API), with PyMongo's ``AsyncGridFSBucket`` names.

A bucket is two collections, ``<bucket_name>.files`` (one document per file) and
``<bucket_name>.chunks`` (the file's bytes, ``chunk_size_bytes`` per document). Both use the
bucket's write concern, read preference and read concern (default: the database's). Every
method takes ``session=`` and runs all its commands in it.

Files are found with :meth:`AsyncGridFSBucket.find`, a filter on files documents: e.g.
``bucket.find({"metadata.owner": "ann"})`` or ``bucket.find({"filename": "a.txt"})``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from asyncmongo._scope import new_id_class
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.selection.read_preference import PRIMARY, ReadPreference
from asyncmongo.errors import ConfigurationError, InvalidArgument
from asyncmongo.gridfs.errors import NoFile
from asyncmongo.gridfs.grid_in import AsyncGridIn
from asyncmongo.gridfs.grid_out import AsyncGridOut
from asyncmongo.gridfs.layout import (
    CHUNKS_INDEX,
    DEFAULT_CHUNK_SIZE,
    FILES_INDEX,
    check_chunk_size,
    has_index,
    revision_query,
)
from asyncmongo.gridfs.lifetime import stream_deadline
from asyncmongo.gridfs.streams import read_pieces, write_to
from asyncmongo.runtime.timeout import current_deadline, timeout

if TYPE_CHECKING:
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.cursor import AsyncCursor
    from asyncmongo.database import AsyncDatabase

__all__ = ["AsyncGridFSBucket"]


class AsyncGridFSBucket:
    """A GridFS bucket in ``database``: upload, download, find, rename and delete files."""

    __slots__ = (
        "_bucket_name",
        "_chunk_size",
        "_chunks",
        "_files",
        "_indexes_checked",
        "_new_id",
        "_timeout_ms",
    )

    def __init__(
        self,
        database: AsyncDatabase[Any],
        bucket_name: str = "fs",
        chunk_size_bytes: int = DEFAULT_CHUNK_SIZE,
        write_concern: WriteConcern | None = None,
        read_preference: ReadPreference | None = None,
        *,
        read_concern: ReadConcern | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        if not isinstance(bucket_name, str) or not bucket_name:
            raise InvalidArgument(f"bucket_name must be a non-empty str, not {bucket_name!r}")
        self._chunk_size = check_chunk_size(chunk_size_bytes)
        self._bucket_name = bucket_name
        # CSOT "GridFS API": inherited from the database unless given; each method's
        # operations share one timeoutMS.
        self._timeout_ms = database.timeout_ms if timeout_ms is None else timeout_ms
        self._files = database.get_collection(
            f"{bucket_name}.files", write_concern=write_concern,
            read_preference=read_preference, read_concern=read_concern, timeout_ms=timeout_ms)
        self._chunks = database.get_collection(
            f"{bucket_name}.chunks", write_concern=write_concern,
            read_preference=read_preference, read_concern=read_concern, timeout_ms=timeout_ms)
        if not self._files.write_concern.acknowledged:
            raise ConfigurationError("GridFS needs an acknowledged write concern")
        self._indexes_checked = False
        #: File ids made here are of the class the database's documents decode to.
        self._new_id = new_id_class(self._files.codec_options)

    def __repr__(self) -> str:
        return (f"<AsyncGridFSBucket {self._files.database.name}.{self._bucket_name}, "
                f"chunk size {self._chunk_size}>")

    @property
    def bucket_name(self) -> str:
        """The bucket's name: its files live in the ``<bucket_name>.files`` and
        ``<bucket_name>.chunks`` collections (``"fs"`` by default)."""
        return self._bucket_name

    @property
    def chunk_size_bytes(self) -> int:
        """The chunk size of new uploads, in bytes (255 KiB by default); an upload stream may be
        given its own. Stored files keep the size they were written with."""
        return self._chunk_size

    def _budget(self) -> contextlib.AbstractContextManager[Any]:
        """One timeoutMS for all the operations of a method (an enclosing
        ``asyncmongo.timeout()`` block, the operation's own timeout, takes precedence)."""
        if self._timeout_ms is None or current_deadline() is not None:
            return contextlib.nullcontext()
        return timeout(self._timeout_ms / 1000)

    # -- indexes ----------------------------------------------------------------------------

    async def _ensure_indexes(self, session: Any) -> None:
        """GridFS spec, Indexes, before the first write of this bucket: when the files
        collection is empty (asked of the primary), create the two indexes unless they
        exist already (listIndexes first, so a read-only user can still upload)."""
        if self._indexes_checked:
            return
        primary_files = self._files.database.get_collection(
            self._files.name, read_preference=PRIMARY)
        if await primary_files.find_one({}, {"_id": 1}, session=session) is None:
            await self._create_index(self._files, FILES_INDEX, False, session)
            await self._create_index(self._chunks, CHUNKS_INDEX, True, session)
        self._indexes_checked = True

    @staticmethod
    async def _create_index(collection: AsyncCollection, keys: tuple[tuple[str, int], ...],
                            unique: bool, session: Any) -> None:
        cursor = await collection.list_indexes(session=session)
        if has_index(await cursor.to_list(), keys):
            return
        options = {"unique": True} if unique else {}
        await collection.create_index(list(keys), session=session, **options)

    # -- upload -----------------------------------------------------------------------------

    def open_upload_stream(
        self,
        filename: str,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> AsyncGridIn:
        """An upload stream for a new file with a generated ObjectId (``grid_in._id``)."""
        return self.open_upload_stream_with_id(
            self._new_id(), filename, chunk_size_bytes, metadata, session)

    def open_upload_stream_with_id(
        self,
        file_id: Any,
        filename: str,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> AsyncGridIn:
        """An upload stream for a new file with the caller's ``file_id``.

        Under timeoutMS (the bucket's, or an enclosing ``asyncmongo.timeout()`` block) the
        stream must be done, ``close()`` included, within timeoutMS of this call."""
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidArgument(f"metadata must be a mapping, not {type(metadata).__name__}")
        chunk_size = self._chunk_size if chunk_size_bytes is None else check_chunk_size(
            chunk_size_bytes)
        return AsyncGridIn(
            self._files, self._chunks, file_id=file_id, filename=filename,
            chunk_size=chunk_size, metadata=metadata, session=session,
            before_write=self._ensure_indexes, deadline=stream_deadline(self._timeout_ms))

    async def upload_from_stream(
        self,
        filename: str,
        source: Any,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> Any:
        """Store ``source`` as a new file; its generated id (an ObjectId of the class the
        database's documents decode to: PyMongo's under the PyMongo-compatible client).

        ``source`` is bytes-like, or has ``read(size)`` (sync or async) read until it
        returns nothing; it is not closed. If reading or storing fails, or the task is
        cancelled, the chunks stored so far are deleted and no files document is written.
        """
        file_id = self._new_id()
        await self.upload_from_stream_with_id(
            file_id, filename, source, chunk_size_bytes, metadata, session)
        return file_id

    async def upload_from_stream_with_id(
        self,
        file_id: Any,
        filename: str,
        source: Any,
        chunk_size_bytes: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
    ) -> None:
        """Store ``source`` as a new file with the caller's ``file_id`` (see
        :meth:`upload_from_stream`)."""
        with self._budget():
            grid_in = self.open_upload_stream_with_id(
                file_id, filename, chunk_size_bytes, metadata, session)
            try:
                async for piece in read_pieces(source, _read_size(grid_in.chunk_size)):
                    await grid_in.write(piece)
            except BaseException:
                # Aborting an upload: the source's error (or the cancellation) is what the
                # caller sees, whether or not the cleanup succeeds.
                with contextlib.suppress(Exception):
                    await grid_in.abort()
                raise
            await grid_in.close()

    # -- download ---------------------------------------------------------------------------

    async def open_download_stream(self, file_id: Any, session: Any = None) -> AsyncGridOut:
        """A download stream of the file with ``file_id`` (NoFile if there is none)."""
        with self._budget():
            document = await self._files.find_one({"_id": file_id}, session=session)
            deadline = stream_deadline(self._timeout_ms)
        if document is None:
            raise NoFile(f"no file in {self._files.name} with _id {file_id!r}")
        return AsyncGridOut(self._chunks, document, session, deadline)

    async def download_to_stream(
        self, file_id: Any, destination: Any, session: Any = None
    ) -> None:
        """Write the file's bytes, chunk by chunk, to ``destination.write`` (sync or async;
        the destination is not closed)."""
        with self._budget():
            grid_out = await self.open_download_stream(file_id, session=session)
            await _copy(grid_out, destination)

    async def open_download_stream_by_name(
        self, filename: str, revision: int = -1, session: Any = None
    ) -> AsyncGridOut:
        """A download stream of one revision of ``filename``: 0 the first stored, 1 the
        next, ...; -1 (default) the latest, -2 the one before, ... (by uploadDate)."""
        direction, skip = revision_query(revision)
        with self._budget():
            document = await self._files.find_one(
                {"filename": filename}, sort=[("uploadDate", direction)], skip=skip,
                session=session)
            if document is not None:
                return AsyncGridOut(
                    self._chunks, document, session, stream_deadline(self._timeout_ms))
            missing = await self._files.find_one(
                {"filename": filename}, {"_id": 1}, session=session) is None
        if missing:
            raise NoFile(f"no file in {self._files.name} named {filename!r}")
        raise NoFile(f"no revision {revision} of file {filename!r} in {self._files.name}")

    async def download_to_stream_by_name(
        self, filename: str, destination: Any, revision: int = -1, session: Any = None
    ) -> None:
        """Write one revision of ``filename`` to ``destination`` (see
        :meth:`open_download_stream_by_name` and :meth:`download_to_stream`)."""
        with self._budget():
            grid_out = await self.open_download_stream_by_name(
                filename, revision, session=session)
            await _copy(grid_out, destination)

    # -- files ------------------------------------------------------------------------------

    def find(self, filter: Any = None, *args: Any, **kwargs: Any) -> AsyncCursor:
        """A cursor over the matching files documents; the options are ``find``'s (sort,
        skip, limit, batch_size, max_time_ms, no_cursor_timeout, allow_disk_use, session).
        Filter on any field of the files document, e.g. ``{"metadata.kind": "photo"}``."""
        return self._files.find(filter, *args, **kwargs)

    async def delete(self, file_id: Any, session: Any = None) -> None:
        """Delete the file's files document, then its chunks (the spec's order: a reader
        then sees no file rather than a file without chunks). NoFile if there was no files
        document (its orphaned chunks are still deleted)."""
        with self._budget():
            result = await self._files.delete_one({"_id": file_id}, session=session)
            await self._chunks.delete_many({"files_id": file_id}, session=session)
        if result.deleted_count == 0:
            raise NoFile(f"no file in {self._files.name} with _id {file_id!r}")

    async def delete_by_name(self, filename: str, session: Any = None) -> None:
        """Delete every revision of ``filename`` (NoFile if there is none)."""
        with self._budget():
            cursor = self._files.find({"filename": filename}, {"_id": 1}, session=session)
            ids = [document["_id"] for document in await cursor.to_list()]
            if not ids:
                raise NoFile(f"no file in {self._files.name} named {filename!r}")
            await self._files.delete_many({"_id": {"$in": ids}}, session=session)
            await self._chunks.delete_many({"files_id": {"$in": ids}}, session=session)

    async def rename(self, file_id: Any, new_filename: str, session: Any = None) -> None:
        """Set the filename of the file with ``file_id`` (NoFile if there is none)."""
        result = await self._files.update_one(
            {"_id": file_id}, {"$set": {"filename": new_filename}}, session=session)
        if result.matched_count == 0:
            raise NoFile(f"no file in {self._files.name} with _id {file_id!r}")

    async def rename_by_name(
        self, filename: str, new_filename: str, session: Any = None
    ) -> None:
        """Rename every revision of ``filename`` (NoFile if there is none)."""
        result = await self._files.update_many(
            {"filename": filename}, {"$set": {"filename": new_filename}}, session=session)
        if result.matched_count == 0:
            raise NoFile(f"no file in {self._files.name} named {filename!r}")

    async def drop(self, session: Any = None) -> None:
        """Drop the files collection, then the chunks collection."""
        with self._budget():
            await self._files.drop(session=session)
            await self._chunks.drop(session=session)
        self._indexes_checked = False


#: How much of a source one read takes: whole chunks, about 4 MiB and at most 256 of them,
#: stored with one insert (fewer round trips than one insert per chunk, bounded memory).
_BATCH_BYTES = 4 * 1024 * 1024
_BATCH_CHUNKS = 256


def _read_size(chunk_size: int) -> int:
    return min(max(1, _BATCH_BYTES // chunk_size), _BATCH_CHUNKS) * chunk_size


async def _copy(grid_out: AsyncGridOut, destination: Any) -> None:
    try:
        async for chunk in grid_out:
            await write_to(destination, chunk)
    finally:
        await grid_out.close()
