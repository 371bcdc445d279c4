"""SessionOptions and TransactionOptions: what ``start_session`` and ``start_transaction`` take.

Immutable (sessions spec: the options of a session cannot change once it started), and
validated when built: unacknowledged write concern in a transaction, or snapshot reads with
causal consistency, are configuration errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from asyncmongo.bson.types import Timestamp
from asyncmongo.core.adopt import adopt_read_concern, adopt_write_concern
from asyncmongo.core.concern import ReadConcern, WriteConcern
from asyncmongo.core.selection import ReadPreference
from asyncmongo.core.selection.read_preference import adopt_read_preference
from asyncmongo.errors import ConfigurationError

__all__ = ["SessionOptions", "TransactionOptions"]


@dataclass(frozen=True, slots=True)
class TransactionOptions:
    """Options of one transaction (None: inherit from the session's defaults, then the
    client)."""

    read_concern: ReadConcern | None = None
    write_concern: WriteConcern | None = None
    read_preference: ReadPreference | None = None
    max_commit_time_ms: int | None = None

    def __post_init__(self) -> None:
        # PyMongo's concerns and read preference are taken as asyncmongo's.
        object.__setattr__(self, "read_concern", adopt_read_concern(self.read_concern))
        object.__setattr__(self, "write_concern", adopt_write_concern(self.write_concern))
        object.__setattr__(
            self, "read_preference", adopt_read_preference(self.read_preference)
        )
        if self.write_concern is not None and not self.write_concern.acknowledged:
            raise ConfigurationError(
                f"transactions do not support unacknowledged write concern: {self.write_concern!r}"
            )

    def merged(self, defaults: TransactionOptions) -> TransactionOptions:
        """These options with every unset field taken from ``defaults``."""
        return TransactionOptions(
            self.read_concern or defaults.read_concern,
            self.write_concern or defaults.write_concern,
            self.read_preference or defaults.read_preference,
            self.max_commit_time_ms
            if self.max_commit_time_ms is not None
            else defaults.max_commit_time_ms,
        )


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """Options of a session (sessions spec, "startSession")."""

    causal_consistency: bool | None = None
    default_transaction_options: TransactionOptions | None = None
    snapshot: bool = False
    default_timeout_ms: int | None = None
    #: Snapshot reads: read at this cluster time instead of the first read's.
    snapshot_time: Timestamp | None = None

    def __post_init__(self) -> None:
        if self.snapshot and self.causal_consistency:
            raise ConfigurationError("snapshot reads and causal consistency are mutually exclusive")
        if self.snapshot_time is not None and not self.snapshot:
            raise ConfigurationError("snapshot_time requires snapshot=True")

    @property
    def causally_consistent(self) -> bool:
        """Causal consistency defaults to on, except for snapshot sessions."""
        if self.causal_consistency is None:
            return not self.snapshot
        return self.causal_consistency


#: Frozen, so one serves every session outside a transaction.
NO_TRANSACTION_OPTIONS = TransactionOptions()
