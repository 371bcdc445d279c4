"""Read and write concerns (specs/read-write-concern).

Both are frozen values built once (from the URI, a keyword or an API call) and validated at
construction, so an invalid concern never reaches the wire. ``document`` is what is sent to the
server; an empty document means "the server's default" and is then omitted from commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asyncmongo.errors import ConfigurationError

__all__ = ["ReadConcern", "WriteConcern"]

_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class ReadConcern:
    """A read concern; ``level`` None means the server's default (nothing is sent).

    Any string level is accepted for forwards compatibility with the server (spec: "Unknown
    Levels and Additional Options for String Based ReadConcerns").
    """

    level: str | None = None

    def __post_init__(self) -> None:
        if self.level is not None and not isinstance(self.level, str):
            raise ConfigurationError(f"read concern level must be a string, not {self.level!r}")

    @property
    def document(self) -> dict[str, Any]:
        """The ``readConcern`` document to send (empty for the server default)."""
        return {} if self.level is None else {"level": self.level}

    @property
    def is_server_default(self) -> bool:
        """True when no level is set: no ``readConcern`` is sent, the server's default applies."""
        return self.level is None


@dataclass(frozen=True, slots=True)
class WriteConcern:
    """A write concern: ``w`` (non-negative int or tag/"majority"), ``wtimeout_ms``, ``journal``.

    Every field None is the server default (spec: "Server's Default WriteConcern"). ``w=0``
    with ``journal=True`` is contradictory and rejected.
    """

    w: int | str | None = None
    wtimeout_ms: int | None = None
    journal: bool | None = None

    def __post_init__(self) -> None:
        _check_w(self.w)
        if self.wtimeout_ms is not None and (
            isinstance(self.wtimeout_ms, bool)
            or not isinstance(self.wtimeout_ms, int)
            or not 0 <= self.wtimeout_ms <= _INT64_MAX
        ):
            raise ConfigurationError(
                f"wtimeoutMS must be a non-negative integer, not {self.wtimeout_ms!r}"
            )
        if self.journal is not None and not isinstance(self.journal, bool):
            raise ConfigurationError(f"journal must be true or false, not {self.journal!r}")
        if self.w == 0 and self.journal:
            raise ConfigurationError("w=0 (unacknowledged) cannot be combined with journal=true")

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> WriteConcern:
        """Build from the spec's field names (``w``, ``wtimeoutMS``, ``journal``)."""
        unknown = set(document) - {"w", "wtimeoutMS", "journal"}
        if unknown:
            raise ConfigurationError(f"unknown write concern field(s): {sorted(unknown)}")
        return cls(document.get("w"), document.get("wtimeoutMS"), document.get("journal"))

    @property
    def document(self) -> dict[str, Any]:
        """The ``writeConcern`` document to send (empty for the server default)."""
        doc: dict[str, Any] = {}
        if self.w is not None:
            doc["w"] = self.w
        if self.wtimeout_ms is not None:
            doc["wtimeout"] = self.wtimeout_ms
        if self.journal is not None:
            doc["j"] = self.journal
        return doc

    @property
    def acknowledged(self) -> bool:
        """False only for ``w=0`` without journaling (spec: "Unacknowledged WriteConcern")."""
        return not (self.w == 0 and not self.journal)

    @property
    def is_server_default(self) -> bool:
        """True when no field is set: no ``writeConcern`` is sent, the server's default applies."""
        return self.w is None and self.wtimeout_ms is None and self.journal is None


def _check_w(w: object) -> None:
    if w is None:
        return
    if isinstance(w, str):
        if not w:
            raise ConfigurationError("w must not be an empty string")
        return
    if isinstance(w, bool) or not isinstance(w, int) or w < 0:
        raise ConfigurationError(f"w must be a non-negative integer or a string, not {w!r}")
