"""AsyncGridIn: the upload stream of one file (GridFS spec: File Upload).

Bytes written are cut into ``chunk_size`` chunks; every complete chunk is inserted as soon as
it is there, the last (short) one on close. The files collection document is inserted last,
by ``close()``, so a reader never sees a file whose chunks are not all stored; an upload that
is aborted, fails or is cancelled leaves no files document. ``abort()`` deletes the chunks
already stored. Under timeoutMS the stream has a lifetime (CSOT "GridFS API"): every write,
``close`` and ``abort`` must be done by the deadline fixed when the stream was opened.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from asyncmongo.bson.binary import Binary
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.bson.types import Int64
from asyncmongo.errors import DuplicateKeyError, InvalidArgument, InvalidOperation
from asyncmongo.gridfs.errors import FileExists
from asyncmongo.gridfs.lifetime import lifetime_budget

if TYPE_CHECKING:
    from asyncmongo.collection import AsyncCollection

__all__ = ["AsyncGridIn"]

BeforeWrite = Callable[[Any], Awaitable[None]]


def _now() -> datetime.datetime:
    """The upload date: UTC now at BSON's millisecond precision."""
    now = datetime.datetime.now(datetime.UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class AsyncGridIn:
    """A file being uploaded; made by ``AsyncGridFSBucket.open_upload_stream``.

    ``await write(data)`` / ``await writelines(pieces)``, then ``await close()`` (or use
    ``async with``: a clean exit closes, an exception aborts). ``_id`` is known from the
    start; ``length`` and ``upload_date`` once closed.
    """

    __slots__ = (
        "_aborted",
        "_before_write",
        "_buffer",
        "_chunk_size",
        "_chunks",
        "_closed",
        "_deadline",
        "_file_id",
        "_filename",
        "_files",
        "_length",
        "_metadata",
        "_n",
        "_session",
        "_upload_date",
    )

    def __init__(
        self,
        files: AsyncCollection,
        chunks: AsyncCollection,
        *,
        file_id: Any,
        filename: str,
        chunk_size: int,
        metadata: Mapping[str, Any] | None = None,
        session: Any = None,
        before_write: BeforeWrite | None = None,
        deadline: float | None = None,
    ) -> None:
        if not isinstance(filename, str):
            raise InvalidArgument(f"filename must be a str, not {type(filename).__name__}")
        self._files = files
        self._chunks = chunks
        self._file_id = file_id
        self._filename = filename
        self._chunk_size = chunk_size
        self._metadata = metadata
        self._session = session
        self._before_write = before_write
        #: CSOT "GridFS API": the stream's lifetime ends at this loop.time() (None: no limit).
        self._deadline = deadline
        self._buffer = bytearray()
        self._n = 0
        self._length = 0
        self._closed = False
        self._aborted = False
        self._upload_date: datetime.datetime | None = None

    def __repr__(self) -> str:
        state = "aborted" if self._aborted else "closed" if self._closed else "open"
        return (f"<AsyncGridIn {self._filename!r} id={self._file_id!r} {state}, "
                f"{self._length + len(self._buffer)} bytes, {self._n} chunks stored>")

    # -- attributes -------------------------------------------------------------------------

    @property
    def _id(self) -> Any:
        """The file's id (its files document's ``_id``, the chunks' ``files_id``)."""
        return self._file_id

    @property
    def filename(self) -> str:
        """The name of the file being uploaded (the files document's ``filename``)."""
        return self._filename

    @property
    def chunk_size(self) -> int:
        """The size of this file's chunks in bytes (the files document's ``chunkSize``); every chunk
        but the last has exactly this size."""
        return self._chunk_size

    @property
    def length(self) -> int:
        """Bytes written so far (the stored length once closed)."""
        return self._length + len(self._buffer)

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        """The application's ``metadata`` document stored with the file, or None."""
        return self._metadata

    @property
    def upload_date(self) -> datetime.datetime | None:
        """When the files document was created; None until ``close()``."""
        return self._upload_date

    @property
    def closed(self) -> bool:
        """True once the upload was closed (the file is stored) or aborted; writing then raises
        InvalidOperation."""
        return self._closed

    # -- writing ----------------------------------------------------------------------------

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append ``data``; the chunks it completes are stored now."""
        if self._closed:
            raise InvalidOperation("cannot write to a closed or aborted GridFS upload")
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidArgument(f"can only write bytes-like data, not {type(data).__name__}")
        self._buffer += data
        if len(self._buffer) >= self._chunk_size:
            with lifetime_budget(self._deadline):
                await self._flush(whole_chunks_only=True)

    async def writelines(self, pieces: Any) -> None:
        """Write each bytes-like piece of an (async or sync) iterable in turn."""
        if hasattr(pieces, "__aiter__"):
            async for piece in pieces:
                await self.write(piece)
        else:
            for piece in pieces:
                await self.write(piece)

    async def _flush(self, *, whole_chunks_only: bool) -> None:
        """Insert the buffered chunks (the trailing partial one too unless asked not to)."""
        size = self._chunk_size
        end = len(self._buffer) // size * size if whole_chunks_only else len(self._buffer)
        if end == 0:
            return
        documents: list[dict[str, Any]] = []
        for start in range(0, end, size):
            piece = bytes(self._buffer[start:min(start + size, end)])
            documents.append({"_id": ObjectId(), "files_id": self._file_id,
                              "n": self._n + len(documents), "data": Binary(piece, 0)})
        await self._ensure_indexes()
        await self._chunks.insert_many(documents, session=self._session)
        del self._buffer[:end]
        self._n += len(documents)
        self._length += end

    async def _ensure_indexes(self) -> None:
        if self._before_write is not None:
            await self._before_write(self._session)

    async def close(self) -> None:
        """Store the last chunk, then the files document; the file is then readable.
        Closing again does nothing; a duplicate ``_id`` raises FileExists."""
        if self._closed:
            return
        with lifetime_budget(self._deadline):
            await self._store_file()

    async def _store_file(self) -> None:
        await self._flush(whole_chunks_only=False)
        await self._ensure_indexes()
        self._upload_date = _now()
        document: dict[str, Any] = {
            "_id": self._file_id,
            "length": Int64(self._length),  # GridFS spec: length is an Int64
            "chunkSize": self._chunk_size,
            "uploadDate": self._upload_date,
            "filename": self._filename,
        }
        if self._metadata is not None:
            document["metadata"] = self._metadata
        try:
            await self._files.insert_one(document, session=self._session)
        except DuplicateKeyError:
            raise FileExists(f"file with id {self._file_id!r} already exists") from None
        self._closed = True

    async def abort(self) -> None:
        """Stop the upload and delete the chunks stored so far (GridFS spec: Aborting an
        upload); later writes fail."""
        if self._closed:
            if self._aborted:
                return
            raise InvalidOperation("cannot abort a GridFS upload that is already closed")
        self._closed = True
        self._aborted = True
        self._buffer.clear()
        with lifetime_budget(self._deadline):
            await self._chunks.delete_many({"files_id": self._file_id}, session=self._session)

    async def __aenter__(self) -> AsyncGridIn:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            await self.close()
        elif not self._closed:
            await self.abort()
