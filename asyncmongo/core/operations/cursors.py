"""Cursor replies, getMore and killCursors (specs/find_getmore_killcursors_commands).

Every cursor-producing command (find, aggregate, listCollections, listIndexes) answers with
``{cursor: {id, ns, firstBatch}}``; getMore with ``nextBatch``. :class:`CursorPage` is that
reply, parsed. getMore and killCursors are pinned to the server that owns the cursor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from asyncmongo.bson.codec_options import CodecOptions
from asyncmongo.bson.types import Int64
from asyncmongo.core.address import Address
from asyncmongo.core.operations.base import Command, ConnectionInfo, Target
from asyncmongo.core.operations.common import Namespace, put
from asyncmongo.core.operations.replies import check_reply
from asyncmongo.errors import ProtocolError

__all__ = ["CursorPage", "GetMore", "KillCursors", "parse_cursor_page"]


class CursorPage:
    """One batch of a server cursor; ``cursor_id`` 0 means the server closed it.

    A plain ``__slots__`` class rather than a frozen dataclass: every cursor-producing
    command builds one, and a frozen dataclass's ``__init__`` costs an ``object.__setattr__``
    call per field. Equality, hash and repr are the dataclass's (over ``_FIELDS``, which a
    subclass extends), and ``with_changes`` is ``dataclasses.replace``; treat it as immutable.
    """

    __slots__ = ("address", "cursor_id", "documents", "namespace", "post_batch_resume_token")

    #: The fields, in constructor order (a subclass with more fields appends its own).
    _FIELDS: tuple[str, ...] = (
        "cursor_id",
        "namespace",
        "documents",
        "post_batch_resume_token",
        "address",
    )

    def __init__(
        self,
        cursor_id: int,
        namespace: Namespace,
        documents: list[Any],
        post_batch_resume_token: Any = None,
        address: Address | None = None,
    ) -> None:
        self.cursor_id = cursor_id
        self.namespace = namespace
        self.documents = documents
        self.post_batch_resume_token = post_batch_resume_token
        self.address = address

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, CursorPage)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def with_changes(self, **changes: Any) -> Self:
        """A copy with some fields replaced (what ``dataclasses.replace`` did)."""
        values = {name: getattr(self, name) for name in self._FIELDS}
        values.update(changes)
        return type(self)(**values)

    def with_address(self, address: Address | None) -> CursorPage:
        """This page naming the server that owns its cursor, when the cursor stays open
        (getMore and killCursors go there)."""
        if not self.cursor_id or self.address is not None:
            return self
        return self.with_changes(address=address)


def parse_cursor_page(reply: Mapping[str, Any], default_namespace: Namespace) -> CursorPage:
    """Read ``cursor.{id, ns, firstBatch|nextBatch}`` (a malformed cursor is a ProtocolError)."""
    if not reply.get("ok") == 1:  # is_ok, inline (check_reply raises the reply's error)
        check_reply(reply)
    cursor = reply.get("cursor")
    if type(cursor) is not dict and not isinstance(cursor, Mapping):  # dict: no ABC check
        raise ProtocolError(f"the reply has no cursor document: {dict(reply)!r}")
    batch = cursor.get("firstBatch", cursor.get("nextBatch"))
    cursor_id = cursor.get("id", 0)
    if not isinstance(batch, list) or not isinstance(cursor_id, int):
        raise ProtocolError(f"malformed cursor document: {dict(cursor)!r}")
    ns = cursor.get("ns")
    namespace = default_namespace
    if isinstance(ns, str) and ns and ns != default_namespace.full_name:  # usually the same
        namespace = Namespace.parse(ns)
    return CursorPage(int(cursor_id), namespace, batch, cursor.get("postBatchResumeToken"))


class GetMore:
    """``getMore`` on the cursor's own server."""

    __slots__ = (
        "batch_size",
        "codec_options",
        "comment",
        "cursor_id",
        "max_time_ms",
        "namespace",
        "target",
    )

    def __init__(
        self,
        cursor_id: int,
        namespace: Namespace,
        address: Address,
        codec_options: CodecOptions,
        *,
        batch_size: int | None = None,
        max_time_ms: int | None = None,
        comment: Any = None,
    ) -> None:
        self.cursor_id = cursor_id
        self.namespace = namespace
        self.codec_options = codec_options
        self.batch_size = batch_size
        self.max_time_ms = max_time_ms
        self.comment = comment
        self.target = Target.pinned(address)

    name = "getMore"

    def build(self, conn: ConnectionInfo) -> Command:
        command: dict[str, Any] = {
            "getMore": Int64(self.cursor_id),
            "collection": self.namespace.collection,
        }
        if self.batch_size:
            command["batchSize"] = self.batch_size
        put(command, "maxTimeMS", self.max_time_ms)
        put(command, "comment", self.comment)
        return Command(self.namespace.database, command)

    def parse(self, reply: Mapping[str, Any]) -> CursorPage:
        return parse_cursor_page(reply, self.namespace)


class KillCursors:
    """``killCursors`` of one cursor on its own server (the reply is not interesting)."""

    __slots__ = ("codec_options", "comment", "cursor_id", "namespace", "target")

    def __init__(
        self,
        cursor_id: int,
        namespace: Namespace,
        address: Address,
        codec_options: CodecOptions,
        comment: Any = None,
    ) -> None:
        self.cursor_id = cursor_id
        self.namespace = namespace
        self.codec_options = codec_options
        self.comment = comment
        self.target = Target.pinned(address)

    name = "killCursors"

    def build(self, conn: ConnectionInfo) -> Command:
        command: dict[str, Any] = {
            "killCursors": self.namespace.collection,
            "cursors": [Int64(self.cursor_id)],
        }
        put(command, "comment", self.comment)
        return Command(self.namespace.database, command)

    def parse(self, reply: Mapping[str, Any]) -> None:
        check_reply(reply)
