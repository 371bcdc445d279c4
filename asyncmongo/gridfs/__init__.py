"""GridFS: files of any size stored as chunks in two collections (GridFS spec).

``AsyncGridFSBucket(database)`` is the API (PyMongo's names): ``upload_from_stream``,
``open_upload_stream`` (an :class:`AsyncGridIn`), ``open_download_stream`` (an
:class:`AsyncGridOut`), ``download_to_stream``, the ``*_by_name`` variants with revisions,
``find``, ``rename``, ``delete`` and ``drop``. Errors: :class:`NoFile`,
:class:`CorruptGridFile`, :class:`FileExists` (all :class:`GridFSError`, a MongoError).
"""

from __future__ import annotations

from asyncmongo.gridfs.bucket import AsyncGridFSBucket
from asyncmongo.gridfs.errors import CorruptGridFile, FileExists, GridFSError, NoFile
from asyncmongo.gridfs.grid_in import AsyncGridIn
from asyncmongo.gridfs.grid_out import AsyncGridOut
from asyncmongo.gridfs.layout import DEFAULT_CHUNK_SIZE

__all__ = [
    "DEFAULT_CHUNK_SIZE",
    "AsyncGridFSBucket",
    "AsyncGridIn",
    "AsyncGridOut",
    "CorruptGridFile",
    "FileExists",
    "GridFSError",
    "NoFile",
]
