"""Bulk writes: statements grouped into runs, batch replies merged, errors rebased.

Ordered (CRUD bulk-write spec): consecutive statements of one kind form a run, runs go in the
user's order and the first write error stops everything. Unordered: all inserts, then all
updates, then all deletes, and every statement is attempted. Every write error's ``index`` is
rebased from its batch to the model's position in the user's list, so
``BulkWriteError.details["writeErrors"][i]["index"]`` always points at the failing model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from asyncmongo.core.operations.statements import StatementKind, WriteStatement
from asyncmongo.core.operations.write import BatchReply
from asyncmongo.errors import BulkWriteError, InvalidOperation

__all__ = ["BulkResult", "Run", "plan_runs"]


@dataclass(frozen=True, slots=True)
class Run:
    """Statements of one kind sent together; ``indexes[i]`` is statement i's user index."""

    kind: StatementKind
    statements: tuple[WriteStatement, ...]
    indexes: tuple[int, ...]


def plan_runs(statements: Sequence[WriteStatement], ordered: bool) -> list[Run]:
    """Group statements into runs (see module docstring)."""
    if not statements:
        raise InvalidOperation("a bulk write needs at least one operation")
    if ordered:
        runs: list[Run] = []
        start = 0
        for i in range(1, len(statements) + 1):
            if i == len(statements) or statements[i].kind is not statements[start].kind:
                chunk = tuple(statements[start:i])
                runs.append(Run(chunk[0].kind, chunk, tuple(range(start, i))))
                start = i
        return runs
    by_kind: dict[StatementKind, list[int]] = {kind: [] for kind in StatementKind}
    for index, statement in enumerate(statements):
        by_kind[statement.kind].append(index)
    return [
        Run(kind, tuple(statements[i] for i in indexes), tuple(indexes))
        for kind, indexes in by_kind.items()
        if indexes
    ]


@dataclass(slots=True)
class BulkResult:
    """The running totals of a bulk write, PyMongo's ``bulk_api_result`` shape."""

    n_inserted: int = 0
    n_matched: int = 0
    n_modified: int = 0
    n_removed: int = 0
    upserted: list[dict[str, Any]] = field(default_factory=list)
    write_errors: list[dict[str, Any]] = field(default_factory=list)
    write_concern_errors: list[dict[str, Any]] = field(default_factory=list)

    def add(self, run: Run, batch: BatchReply) -> None:
        """Merge one acknowledged batch reply of ``run``."""
        reply = batch.reply
        n = int(reply.get("n", 0))
        if run.kind is StatementKind.INSERT:
            self.n_inserted += n
        elif run.kind is StatementKind.DELETE:
            self.n_removed += n
        else:
            upserted = reply.get("upserted") or []
            self.n_matched += n - len(upserted)
            self.n_modified += int(reply.get("nModified", 0))
            for item in upserted:
                index = run.indexes[batch.start + int(item["index"])]
                self.upserted.append({"index": index, "_id": item.get("_id")})
        for error in reply.get("writeErrors") or []:
            position = batch.start + int(error.get("index", 0))
            rebased = dict(error)
            rebased["index"] = run.indexes[position]
            rebased["op"] = run.statements[position].document
            self.write_errors.append(rebased)
        concern_error = reply.get("writeConcernError")
        if isinstance(concern_error, Mapping):
            self.write_concern_errors.append(dict(concern_error))

    @property
    def has_write_errors(self) -> bool:
        return bool(self.write_errors)

    def document(self) -> dict[str, Any]:
        return {
            "writeErrors": self.write_errors,
            "writeConcernErrors": self.write_concern_errors,
            "nInserted": self.n_inserted,
            "nUpserted": len(self.upserted),
            "nMatched": self.n_matched,
            "nModified": self.n_modified,
            "nRemoved": self.n_removed,
            "upserted": self.upserted,
        }

    def raise_if_failed(self) -> None:
        """BulkWriteError with every error (sorted by user index) when any write failed."""
        if self.write_errors or self.write_concern_errors:
            self.write_errors.sort(key=lambda error: int(error["index"]))
            raise BulkWriteError(self.document())
