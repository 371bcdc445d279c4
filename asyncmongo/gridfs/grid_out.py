"""AsyncGridOut: the download stream of one stored file (GridFS spec: File Download,
Partial File Retrieval).

Chunks are read lazily from one cursor over ``{files_id: id, n: {$gte: k}}`` sorted by ``n``;
each is checked (expected ``n``, expected size) before its bytes are handed out. ``seek`` to
another chunk reopens the cursor at that chunk, so a partial read fetches only the chunks it
needs. A zero-length file never queries the chunks collection.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import AsyncIterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

from asyncmongo.errors import InvalidArgument
from asyncmongo.gridfs.errors import CorruptGridFile
from asyncmongo.gridfs.layout import check_chunk, chunk_count
from asyncmongo.gridfs.lifetime import lifetime_budget

if TYPE_CHECKING:
    from asyncmongo.collection import AsyncCollection
    from asyncmongo.cursor import AsyncCursor

__all__ = ["AsyncGridOut"]


def _whole_number(document: Mapping[str, Any], name: str) -> int:
    """A files document's ``length`` or ``chunkSize``: an int (Int32/Int64), or a whole
    double as some older drivers and the shell wrote them."""
    value = document.get(name)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptGridFile(f"files document has no valid {name!r}: {value!r}")
    return value  # as stored: an Int64 stays one, as PyMongo's GridOut hands it back


class AsyncGridOut:
    """A stored file opened for reading; made by ``AsyncGridFSBucket.open_download_stream``.

    ``await read(size=-1)``, ``await readchunk()``, ``seek``/``tell``, ``async for chunk in
    grid_out`` (the rest of the file, chunk by chunk). The files document's fields are
    attributes (``_id``, ``filename``, ``length``, ``chunk_size``, ``upload_date``,
    ``metadata``, ...). ``await close()`` (or ``async with``) ends the chunks cursor.
    """

    __slots__ = (
        "_buffer",
        "_buffer_n",
        "_chunks",
        "_cursor",
        "_deadline",
        "_document",
        "_iterator",
        "_next_n",
        "_position",
        "_session",
        "chunk_size",
        "length",
    )

    def __init__(
        self,
        chunks: AsyncCollection,
        file_document: Mapping[str, Any],
        session: Any = None,
        deadline: float | None = None,
    ) -> None:
        self._chunks = chunks
        #: CSOT "GridFS API": the stream's lifetime ends at this loop.time() (None: no limit).
        self._deadline = deadline
        self._document = file_document
        self._session = session
        self.length = _whole_number(file_document, "length")
        self.chunk_size = _whole_number(file_document, "chunkSize")
        if self.length < 0 or self.chunk_size <= 0:
            raise CorruptGridFile(
                f"files document has length {self.length} and chunkSize {self.chunk_size}"
            )
        self._position = 0
        self._buffer = b""
        self._buffer_n = -1
        self._next_n = 0
        self._cursor: AsyncCursor | None = None
        self._iterator: AsyncIterator[Any] | None = None

    def __repr__(self) -> str:
        return (f"<AsyncGridOut {self.filename!r} id={self._id!r} at {self._position} of "
                f"{self.length} bytes, chunk size {self.chunk_size}>")

    # -- the files document -----------------------------------------------------------------

    @property
    def _id(self) -> Any:
        return self._document.get("_id")

    @property
    def filename(self) -> str | None:
        """The filename (None for a legacy file stored without one)."""
        return self._document.get("filename")

    @property
    def name(self) -> str | None:
        """The filename, under the name io's file objects give it (as PyMongo's GridOut)."""
        return self._document.get("filename")

    @property
    def upload_date(self) -> datetime.datetime | None:
        """When the file was stored (the files document's ``uploadDate``, a UTC datetime, naive
        unless the codec options are tz_aware), or None if the document has none."""
        return self._document.get("uploadDate")

    @property
    def metadata(self) -> Mapping[str, Any] | None:
        """The application's ``metadata`` document stored with the file, or None."""
        return self._document.get("metadata")

    @property
    def content_type(self) -> str | None:
        """The deprecated ``contentType`` field, if the file has one."""
        return self._document.get("contentType")

    @property
    def aliases(self) -> list[str] | None:
        """The deprecated ``aliases`` field, if the file has one."""
        return self._document.get("aliases")

    @property
    def md5(self) -> str | None:
        """The deprecated ``md5`` field of files stored by older drivers (never computed)."""
        return self._document.get("md5")

    @property
    def file_document(self) -> Mapping[str, Any]:
        """The whole files collection document."""
        return self._document

    # -- position ---------------------------------------------------------------------------

    def tell(self) -> int:
        """The current position in the file."""
        return self._position

    def seek(self, pos: int, whence: int = 0) -> int:
        """Move to ``pos`` from the start (whence 0), the current position (1) or the end
        (2); a position before the start is an error, one past the end reads nothing."""
        if whence == 0:
            new = pos
        elif whence == 1:
            new = self._position + pos
        elif whence == 2:
            new = self.length + pos
        else:
            raise InvalidArgument(f"whence must be 0, 1 or 2, not {whence!r}")
        if type(new) is not int or new < 0:
            raise InvalidArgument(f"cannot seek to position {new!r}")
        self._position = new
        return new

    def seekable(self) -> bool:
        """Always True: ``seek`` moves anywhere in the file (io's protocol, as in PyMongo)."""
        return True

    def readable(self) -> bool:
        """Always True: the stream is for reading (io's protocol, as in PyMongo)."""
        return True

    # -- reading ----------------------------------------------------------------------------

    async def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes from the current position (the rest of the file when
        ``size`` is negative); b"" at the end. Reading through the end also checks that no
        extra non-empty chunk follows."""
        remaining = max(self.length - self._position, 0)
        if size < 0 or size > remaining:
            size = remaining
        pieces = []
        got = 0
        with self._budget():
            while got < size:
                piece = await self._read_in_chunk(size - got)
                pieces.append(piece)
                got += len(piece)
            if self._position >= self.length > 0 and self._iterator is not None:
                await self._check_no_extra_chunk()
        return b"".join(pieces)

    async def readline(self, size: int = -1) -> bytes:
        """The bytes up to and including the next newline, at most ``size`` of them (no
        limit when negative); b"" at the end (io's readline, as PyMongo's GridOut)."""
        remaining = max(self.length - self._position, 0)
        if size < 0 or size > remaining:
            size = remaining
        with self._budget():
            return await self._readline(size)

    async def _readline(self, size: int) -> bytes:
        pieces = []
        got = 0
        while got < size:
            n = self._position // self.chunk_size
            if n != self._buffer_n:
                await self._load_chunk(n)
            offset = self._position - n * self.chunk_size
            newline = self._buffer.find(b"\n", offset)
            most = size - got if newline < 0 else min(size - got, newline + 1 - offset)
            piece = await self._read_in_chunk(most)
            pieces.append(piece)
            got += len(piece)
            if piece.endswith(b"\n"):
                break
        if self._position >= self.length > 0 and self._iterator is not None:
            await self._check_no_extra_chunk()
        return b"".join(pieces)

    async def readchunk(self) -> bytes:
        """The rest of the chunk holding the current position (b"" at the end)."""
        if self._position >= self.length:
            return b""
        with self._budget():
            return await self._read_in_chunk(self.chunk_size)

    def _budget(self) -> contextlib.AbstractContextManager[Any]:
        """What is left of the stream's lifetime, for the reads of one call."""
        return lifetime_budget(self._deadline)

    async def _read_in_chunk(self, most: int) -> bytes:
        n = self._position // self.chunk_size
        if n != self._buffer_n:
            await self._load_chunk(n)
        offset = self._position - n * self.chunk_size
        whole = offset == 0 and most >= len(self._buffer)
        piece = self._buffer if whole else self._buffer[offset:offset + most]
        if not piece:
            raise CorruptGridFile(f"chunk #{n} ends before position {self._position}")
        self._position += len(piece)
        return piece

    async def _load_chunk(self, n: int) -> None:
        """Make chunk ``n`` the buffered one, checked against the files document."""
        if self._iterator is None or self._next_n != n:
            await self._open_cursor(n)
        assert self._iterator is not None
        document = await anext(self._iterator, None)
        if document is None:
            count = chunk_count(self.length, self.chunk_size)
            raise CorruptGridFile(f"missing chunk #{n} of {count}")
        data = check_chunk(document, n, self.length, self.chunk_size)
        if data is None:
            raise CorruptGridFile(f"chunk #{n} is empty")
        self._buffer = data
        self._buffer_n = n
        self._next_n = n + 1

    async def _check_no_extra_chunk(self) -> None:
        assert self._iterator is not None
        while (document := await anext(self._iterator, None)) is not None:
            check_chunk(document, self._next_n, self.length, self.chunk_size)
            self._next_n += 1
        await self._close_cursor()

    async def _open_cursor(self, n: int) -> None:
        await self._close_cursor()
        query: dict[str, Any] = {"files_id": self._id}
        if n > 0:
            query["n"] = {"$gte": n}
        self._cursor = self._chunks.find(query, sort=[("n", 1)], session=self._session)
        self._iterator = aiter(self._cursor)
        self._next_n = n

    async def _close_cursor(self) -> None:
        cursor, self._cursor, self._iterator = self._cursor, None, None
        if cursor is not None:
            await cursor.close()

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks_from_here()

    async def _chunks_from_here(self) -> AsyncIterator[bytes]:
        while chunk := await self.readchunk():
            yield chunk
        if self.length > 0 and self._iterator is not None:
            with self._budget():
                await self._check_no_extra_chunk()

    async def close(self) -> None:
        """End the chunks cursor (reading again reopens it), within the stream's lifetime."""
        with self._budget():
            await self._close_cursor()

    async def __aenter__(self) -> AsyncGridOut:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


