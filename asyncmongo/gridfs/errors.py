"""GridFS errors, with PyMongo's names (``gridfs.errors``)."""

from __future__ import annotations

from asyncmongo.errors import MongoError

__all__ = ["CorruptGridFile", "FileExists", "GridFSError", "NoFile"]


class GridFSError(MongoError):
    """Base class of the GridFS errors."""


class NoFile(GridFSError):
    """No files collection document for the id, filename or revision asked for."""


class CorruptGridFile(GridFSError):
    """A stored file's chunks disagree with its files document: a chunk missing, out of
    order, of the wrong size, or one too many (GridFS spec: File Download)."""


class FileExists(GridFSError):
    """A file with this ``_id`` already exists (the files document insert was a duplicate)."""
